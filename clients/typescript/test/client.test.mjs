// Errors and retries against the real service, with fetch wrappers standing in for a
// network that fails (a 503 before the service, a response lost after it, a connection
// refused, a server that never answers).
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import {
  APIConnectionError,
  APITimeoutError,
  AgentrunClient,
  Forbidden,
  InvalidInput,
  NotFound,
  ProblemError,
  RetryPolicy,
  Unauthorized,
  Unavailable,
  ValidationError,
} from "@agentrun/client";

const model = { provider: "scripted", name: "demo" };

function unavailable() {
  const problem = { type: "/problems/service-unavailable", title: "Service Unavailable", status: 503, detail: "away" };
  return new Response(JSON.stringify(problem), {
    status: 503,
    headers: { "content-type": "application/problem+json", "retry-after": "0" },
  });
}

test("a create is retried with one idempotency key: one run, also after a lost response", async () => {
  const keys = [];
  let calls = 0;
  const client = new AgentrunClient({
    fetch: async (request) => {
      if (request.method !== "POST") return fetch(request);
      keys.push(request.headers.get("idempotency-key"));
      calls++;
      if (calls === 1) return unavailable(); // refused before the service
      const response = await fetch(request);
      if (calls === 2) return new Response("bad gateway", { status: 502 }); // its answer lost
      return response;
    },
  });
  const marker = `lost-${Date.now()}`;
  const run = await client.runs.create({ prompt: "once", model, metadata: { marker } });
  assert.equal(calls, 3);
  assert.equal(new Set(keys).size, 1);
  assert.match(keys[0], /^agentrun-client-[0-9a-f-]{36}$/);
  const same = [];
  for await (const r of client.runs.list({ pageSize: 100 })) if (r.metadata.marker === marker) same.push(r.id);
  assert.deepEqual(same, [run.id]);
});

test("an unsafe call is not retried on 503; the error carries the problem", async () => {
  let calls = 0;
  const client = new AgentrunClient({
    fetch: async (request) => {
      if (!request.url.endsWith("/cancel")) return fetch(request);
      calls++;
      return unavailable();
    },
  });
  const run = await client.runs.create({ prompt: "x", model });
  const error = await client.runs.cancel(run.id).then(
    () => assert.fail("cancel went through"),
    (e) => e,
  );
  assert.ok(error instanceof Unavailable && error instanceof ProblemError);
  assert.equal(calls, 1);
  assert.equal(error.retryAfter, 0);
  assert.equal(error.code, "service-unavailable");
  assert.equal(error.problem.detail, "away");
});

test("a connection never made is retried within the budget, then APIConnectionError", async () => {
  const server = createServer().listen(0, "127.0.0.1");
  await new Promise((resolve) => server.once("listening", resolve));
  const port = server.address().port;
  await new Promise((resolve) => server.close(resolve)); // nothing listens there now
  let attempts = 0;
  const client = new AgentrunClient({
    baseUrl: `http://127.0.0.1:${port}`,
    retry: new RetryPolicy({ maxElapsed: 0.5, baseDelay: 0.05, maxDelay: 0.1 }),
    fetch: (request) => {
      attempts++;
      return fetch(request);
    },
  });
  await assert.rejects(client.runs.cancel("run_x"), APIConnectionError);
  assert.ok(attempts > 2, `${attempts} attempts`);
});

test("a request that hears nothing times out", async () => {
  const client = new AgentrunClient({
    timeout: 0.2,
    retry: { maxRetries: 0 },
    fetch: (request) =>
      new Promise((_resolve, reject) => request.signal.addEventListener("abort", () => reject(request.signal.reason))),
  });
  await assert.rejects(client.runs.get("run_x"), APITimeoutError);
});

test("refusals are typed by their problem", async () => {
  const client = new AgentrunClient();
  await assert.rejects(new AgentrunClient({ apiKey: "wrong" }).runs.get("run_x"), (e) => {
    return e instanceof Unauthorized && e.code === "unauthorized" && e.status === 401;
  });
  await assert.rejects(client.runs.create({ prompt: "x" }), (e) => {
    return e instanceof ValidationError && e.code === "invalid-request";
  });
  await assert.rejects(client.agents.get("nobody"), (e) => e instanceof NotFound && e.code === "agent-not-found");
  assert.throws(() => client.runs.waiter("not a run id"), InvalidInput);
  await assert.rejects(client.runs.wait("run_x", { statuses: "finished" }), InvalidInput);

  const run = await client.runs.create({ prompt: "x", model });
  const { token } = await client.runs.browserToken(run.id, { ttl: 60 });
  const browser = new AgentrunClient({ browserToken: token });
  assert.equal((await browser.runs.wait(run.id)).status, "completed");
  await assert.rejects(browser.runs.create({ prompt: "x", model }), (e) => {
    return e instanceof Forbidden && e.code === "forbidden" && e.permission === "runs:create";
  });
  await assert.rejects(new AgentrunClient({ browserToken: `${token}x` }).runs.listEvents(run.id), (e) => {
    return e instanceof Unauthorized && e.code === "browser-token-invalid";
  });
});

test("the retry policy's budget", () => {
  const policy = new RetryPolicy({ random: () => 1 });
  assert.equal(policy.delay(0, 0), 0.25);
  assert.equal(policy.delay(3, 0), 2);
  assert.equal(policy.delay(0, 14.9), undefined);
  assert.equal(policy.delay(0, 0, 20), undefined); // a Retry-After past the budget
  assert.equal(policy.delay(20, 0), undefined);
  assert.equal(new RetryPolicy({ maxRetries: 0 }).delay(0, 0), undefined);
  assert.equal(new RetryPolicy({ random: () => 0 }).backoff(1), 0.25);
});
