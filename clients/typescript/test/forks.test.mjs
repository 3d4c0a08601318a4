// Forks and replays against the real service: a run's checkpoints, a fork with a patched
// result executed by the same tools, a replay that reproduces its run with no model call,
// a run's forks oldest first a page at a time, refusals typed by their problem, and a fork
// retried after its response was lost made once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentrunClient, Conflict, InvalidInput, NotFound, ValidationError, tool } from "@agentrun/client";

const script = [
  { tool_calls: [{ name: "add", arguments: { a: 1, b: 2 } }] },
  { tool_calls: [{ name: "add", arguments: { a: 3, b: 4 } }] },
  { text: "the sums are 3 and 7" },
];
const model = { provider: "scripted", name: "demo", script };
const add = tool({
  name: "add",
  description: "Add two numbers.",
  parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } } },
  execute: async ({ a, b }) => a + b,
});

async function completed(client) {
  const run = await client.run("add 1+2, then 3+4", { tools: [add], model, timeout: 30 });
  assert.equal(run.status, "completed");
  return run;
}

async function messages(client, id) {
  const out = [];
  for await (const m of client.runs.messages(id)) out.push(m.message);
  return out;
}

test("checkpoints, and a fork with a patched result executed here", async () => {
  const client = new AgentrunClient();
  const run = await completed(client);
  assert.equal(run.forked_from, null);
  const checkpoints = await client.runs.checkpoints(run.id);
  assert.deepEqual(
    checkpoints.map((c) => [c.seq, c.kind, c.turn]),
    [
      [1, "start", 0],
      [2, "tool_calls", 1],
      [3, "tool_results", 1],
      [4, "tool_calls", 2],
      [5, "tool_results", 2],
      [6, "answer", 3],
    ],
  );
  assert.ok(checkpoints[5].usage.total_tokens > 0);
  const original = await messages(client, run.id);
  const callId = original[1].content[0].id;

  const fork = await client.runs.fork(run.id, {
    at: 3,
    patch: { tool_results: [{ tool_call_id: callId, output: 42 }] },
    overrides: { metadata: { branch: "patched" }, tools: [add] },
  });
  assert.deepEqual(fork.forked_from, { run_id: run.id, checkpoint: 3, mode: "fork", on_divergence: "live" });
  assert.deepEqual(fork.metadata, { branch: "patched" });
  const done = await client.execute(fork.id, [add], { timeout: 30 });
  assert.equal(done.status, "completed");
  assert.equal(done.output, "the sums are 3 and 7");
  const forked = await messages(client, fork.id);
  assert.deepEqual(forked.slice(0, 2), original.slice(0, 2));
  assert.deepEqual(forked[2].content[0].content, [{ type: "json", value: 42 }]);
  assert.deepEqual(await messages(client, run.id), original); // the original is unchanged
});

test("a replay reproduces its run from the recording", async () => {
  const client = new AgentrunClient();
  const run = await completed(client);
  const replay = await client.runs.fork(run.id, { mode: "replay", on_divergence: "fail" });
  assert.equal(replay.forked_from.mode, "replay");
  const done = await client.runs.wait(replay.id, { timeout: 30 }); // (no executor: replayed)
  assert.equal(done.status, "completed");
  assert.equal(done.output, run.output);
  const types = (await client.runs.listEvents(replay.id)).map((e) => e.type);
  assert.equal(types.filter((t) => t === "model.replayed").length, 3);
  assert.ok(!types.includes("model.called") && !types.includes("replay.diverged"));
});

test("a run's forks and replays, oldest first, a page at a time", async () => {
  const client = new AgentrunClient();
  const run = await completed(client);
  const ids = async (iterable) => {
    const out = [];
    for await (const r of iterable) out.push(r.id);
    return out;
  };
  assert.deepEqual(await ids(client.runs.forks(run.id)), []);
  const made = [
    await client.runs.fork(run.id, { at: 3 }),
    await client.runs.fork(run.id, { mode: "replay", on_divergence: "fail" }),
    await client.runs.fork(run.id, { at: 5 }),
  ];
  const nested = await client.runs.fork(made[0].id, { at: 1 });
  const listed = [];
  for await (const r of client.runs.forks(run.id, { pageSize: 2 })) listed.push(r);
  assert.deepEqual(listed.map((r) => r.id), made.map((r) => r.id)); // (not the fork's own fork)
  assert.deepEqual(
    listed.map((r) => [r.forked_from.run_id, r.forked_from.checkpoint, r.forked_from.mode]),
    [
      [run.id, 3, "fork"],
      [run.id, 1, "replay"],
      [run.id, 5, "fork"],
    ],
  );
  const first = await client.runs.forksPage(run.id, { limit: 2 });
  assert.deepEqual(first.data.map((r) => r.id), [made[0].id, made[1].id]);
  assert.ok(first.next_cursor);
  const rest = await client.runs.forksPage(run.id, { limit: 2, cursor: first.next_cursor });
  assert.deepEqual(rest.data.map((r) => r.id), [made[2].id]);
  assert.equal(rest.next_cursor, null);
  assert.deepEqual(await ids(client.runs.forks(made[0].id)), [nested.id]);
});

test("refusals are typed, and nothing is made", async () => {
  const client = new AgentrunClient();
  const run = await completed(client);
  const callId = (await messages(client, run.id))[1].content[0].id;
  await assert.rejects(
    client.runs.fork(run.id, { at: 2, patch: { append: [{ role: "user", content: "never mind" }] } }),
    (e) => e instanceof Conflict && e.code === "fork-split" && e.toolCallId === callId,
  );
  await assert.rejects(client.runs.fork(run.id, { at: 7 }), (e) => e instanceof ValidationError);
  await assert.rejects(client.runs.fork("run_missing", { at: 1 }), NotFound);
  await assert.rejects(client.runs.checkpoints("run_missing"), NotFound);
  await assert.rejects(client.runs.forksPage("run_missing"), (e) => e instanceof NotFound && e.code === "run-not-found");
  await assert.rejects(client.runs.forksPage(run.id, { limit: 0 }), ValidationError);
  await assert.rejects(client.runs.forksPage(run.id, { cursor: "not a cursor" }), ValidationError);
  await assert.rejects(client.runs.forks("not a run id").next(), InvalidInput);
  await assert.rejects(client.runs.fork(run.id, { at: 0 }), InvalidInput);
  await assert.rejects(client.runs.fork("not a run id"), InvalidInput);
});

test("a fork is retried with one idempotency key: one fork, also after a lost response", async () => {
  const keys = [];
  let calls = 0;
  const client = new AgentrunClient({
    fetch: async (request) => {
      if (!request.url.endsWith("/fork")) return fetch(request);
      keys.push(request.headers.get("idempotency-key"));
      calls++;
      const response = await fetch(request);
      if (calls === 1) return new Response("bad gateway", { status: 502 }); // its answer lost
      return response;
    },
  });
  const run = await client.runs.create({ prompt: "once", model: { provider: "scripted", name: "echo" } });
  const fork = await client.runs.fork(run.id);
  assert.equal(calls, 2);
  assert.equal(new Set(keys).size, 1);
  assert.match(keys[0], /^agentrun-client-[0-9a-f-]{36}$/);
  const again = await client.runs.fork(run.id, { idempotencyKey: keys[0] });
  assert.equal(again.id, fork.id);
  const made = [];
  for await (const r of client.runs.list({ pageSize: 100 })) {
    if (r.forked_from?.run_id === run.id) made.push(r.id);
  }
  assert.deepEqual(made, [fork.id]);
});
