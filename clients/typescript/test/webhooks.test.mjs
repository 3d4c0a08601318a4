// The webhook executor on a node:http server, answering the real service's signed
// deliveries (AGENTRUN_WEBHOOK_SECRET; the service may deliver to loopback), and refusing
// what is not signed with the secret.
import assert from "node:assert/strict";
import http from "node:http";
import { test } from "node:test";
import { AgentrunClient, tool } from "@agentrun/client";
import { webhookExecutor } from "@agentrun/client/webhooks";
import { Webhook } from "standardwebhooks";

const SECRET = process.env.AGENTRUN_WEBHOOK_SECRET;

function serve(handler) {
  const server = http.createServer(handler);
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

function post(url, body, headers) {
  return fetch(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers } });
}

function signed(id, payload, secret = SECRET) {
  const body = JSON.stringify(payload);
  const timestamp = new Date();
  const signature = new Webhook(secret).sign(id, timestamp, body);
  const headers = {
    "webhook-id": id,
    "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
    "webhook-signature": signature,
  };
  return { body, headers };
}

test("a webhook executor answers the service's signed deliveries: two tool rounds", async () => {
  assert.ok(SECRET, "AGENTRUN_WEBHOOK_SECRET is the service's secret");
  const calls = [];
  const add = tool({
    name: "add",
    description: "Add two numbers.",
    parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
    execute: ({ a, b }, context) => {
      calls.push([a, b, context.callId]);
      return a + b;
    },
  });
  const events = [];
  let completed;
  const delivered = new Promise((resolve) => {
    completed = resolve;
  });
  const onEvent = (payload) => {
    events.push(payload.type);
    if (payload.type === "run.completed") completed();
  };
  const executor = webhookExecutor({ tools: [add], secret: SECRET, onEvent });
  const server = await serve(executor.handler);
  try {
    const client = new AgentrunClient();
    const run = await client.runs.create({
      prompt: "1+2, then 3+4",
      model: {
        provider: "scripted",
        name: "demo",
        script: [
          { tool_calls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
          { tool_calls: [{ name: "add", arguments: { a: 3, b: 4 } }] },
          { text: "3 and 7" },
        ],
      },
      tools: [add],
      webhook: `http://127.0.0.1:${server.address().port}/hooks`,
    });
    const done = await client.runs.wait(run.id, { statuses: "completed", timeout: 30 });
    assert.equal(done.output, "3 and 7");
    assert.deepEqual(
      calls.map(([a, b]) => [a, b]),
      [
        [1, 2],
        [3, 4],
      ],
    );
    await delivered; // (run.completed is delivered after the run ends)
    assert.deepEqual(events, ["run.requires_action", "run.requires_action", "run.completed"]);

    // A redelivery of an executed event (a new id, the same calls) executes nothing again.
    const data = { run_id: run.id, status: "requires_action", round: 1, callback_url: "http://127.0.0.1:1/v1/callbacks/x/tool-results",
      tool_calls: [{ id: calls[0][2], name: "add", arguments: { a: 1, b: 2 } }] };
    const again = signed("msg_again", { type: "run.requires_action", timestamp: new Date().toISOString(), data });
    const url = `http://127.0.0.1:${server.address().port}/hooks`;
    assert.equal((await post(url, again.body, again.headers)).status, 202);
    await executor.drain();
    assert.equal(calls.length, 2);
  } finally {
    await executor.drain();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("deliveries that are not signed with the secret are refused", async () => {
  const seen = [];
  const executor = webhookExecutor({
    tools: {},
    secret: SECRET,
    onEvent: (payload) => seen.push(payload.data.n),
    log: () => undefined,
  });
  const server = await serve(executor.handler);
  const url = `http://127.0.0.1:${server.address().port}/`;
  try {
    const payload = { type: "run.completed", timestamp: new Date().toISOString(), data: { n: 1 } };
    const good = signed("msg_1", payload);
    assert.equal((await post(url, good.body, good.headers)).status, 202);
    const duplicate = await post(url, good.body, good.headers);
    assert.equal(duplicate.status, 200);
    assert.deepEqual(await duplicate.json(), { duplicate: true });
    const forged = signed("msg_2", payload, "whsec_" + btoa("another secret of 32 bytes......"));
    assert.equal((await post(url, forged.body, forged.headers)).status, 401);
    const altered = signed("msg_3", payload);
    assert.equal((await post(url, altered.body.replace('"n":1', '"n":2'), altered.headers)).status, 401);
    assert.equal((await post(url, good.body, {})).status, 401);
    const old = signed("msg_4", payload);
    old.headers["webhook-timestamp"] = String(Math.floor(Date.now() / 1000) - 600);
    assert.equal((await post(url, old.body, old.headers)).status, 401);
    const get = await fetch(url);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get("allow"), "POST");
    // The Fetch API's form (Deno, Bun) answers the same way.
    const viaFetch = signed("msg_5", { ...payload, data: { n: 5 } });
    const answer = await executor.fetch(new Request(url, { method: "POST", body: viaFetch.body, headers: viaFetch.headers }));
    assert.equal(answer.status, 202);
    await executor.drain();
    assert.deepEqual(seen, [1, 5]);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
});
