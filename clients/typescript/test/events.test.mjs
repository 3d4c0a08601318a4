// Live events against the real service: a stream cut mid-way (the connection killed in
// the middle of an event) is resumed with Last-Event-ID, and the iteration holds every
// event of the run once, in order.
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentrunClient, tool } from "@agentrun/client";

const step = tool({ name: "step", description: "One step.", execute: (_args, ctx) => ctx.callId });
/** A model that calls `step` in four rounds, then answers: some 25 events, live. */
const STEPS = {
  provider: "scripted",
  name: "demo",
  delay_ms: 100,
  script: [1, 2, 3, 4].map(() => ({ tool_calls: [{ name: "step", arguments: {} }] })).concat([{ text: "walked" }]),
};

/** A fetch that kills each of the first `cuts.length` event streams: stream i is cut
 * `cuts[i]` events in, in the middle of the next event's bytes. Records the
 * `Last-Event-ID` each stream request sent. */
function cuttingFetch(cuts) {
  const lastEventIds = [];
  const fetcher = async (request) => {
    const response = await fetch(request);
    if (request.headers.get("accept") !== "text/event-stream") return response;
    lastEventIds.push(request.headers.get("last-event-id"));
    const cut = cuts[lastEventIds.length - 1];
    if (cut === undefined) return response;
    const reader = response.body.getReader();
    let ends = 0; // message ends (blank lines) passed on so far
    let previous = 0;
    const body = new ReadableStream({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        for (let i = 0; i < value.length; i++) {
          if (value[i] === 13) continue; // (the server ends lines with CRLF)
          if (value[i] === 10 && previous === 10 && ++ends === cut) {
            const stop = Math.min(value.length, i + 1 + 12); // a few bytes of the next event
            controller.enqueue(value.slice(0, stop));
            await reader.cancel();
            return controller.error(new TypeError("terminated: the connection was killed"));
          }
          previous = value[i];
        }
        controller.enqueue(value);
      },
      cancel: () => reader.cancel(),
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };
  return { fetcher, lastEventIds };
}

test("events resume across killed connections with no gap and no duplicate", async () => {
  const { fetcher, lastEventIds } = cuttingFetch([3, 6]);
  const client = new AgentrunClient({ fetch: fetcher, retry: { baseDelay: 0.05 } });
  const executor = new AgentrunClient();
  const run = await executor.runs.create({ prompt: "Walk", model: STEPS, tools: [step] });
  const executed = executor.execute(run.id, [step], { timeout: 60 });
  const seen = [];
  for await (const event of client.runs.events(run.id)) seen.push(event);
  assert.equal((await executed).output, "walked");
  const log = await executor.runs.listEvents(run.id);
  assert.deepEqual(
    seen.map((e) => e.seq),
    log.map((e) => e.seq),
  );
  assert.deepEqual(
    seen.map((e) => e.type),
    log.map((e) => e.type),
  );
  assert.equal(seen.at(-1).type, "run.completed");
  assert.equal(seen.filter((e) => e.type === "tool_result.received").length, 4);
  // Three connections: the first from the start, each next one after the last event seen.
  assert.deepEqual(lastEventIds, [null, String(seen[2].seq), String(seen[8].seq)]);
});

test("events after a position, and a break that closes the stream", async () => {
  const client = new AgentrunClient();
  const run = await client.runs.create({ prompt: "hi", model: { provider: "scripted", name: "demo" } });
  const all = [];
  for await (const event of client.runs.events(run.id)) all.push(event);
  const later = [];
  for await (const event of client.runs.events(run.id, { after: 2 })) later.push(event.seq);
  assert.deepEqual(later, all.slice(2).map((e) => e.seq));
  for await (const event of client.runs.events(run.id)) {
    assert.equal(event.seq, 1);
    break;
  }
});

test("an abort signal stops a live stream", async () => {
  const client = new AgentrunClient();
  const run = await client.runs.create({
    prompt: "slow",
    model: { provider: "scripted", name: "demo", delay_ms: 5000 },
  });
  const controller = new AbortController();
  const seen = [];
  await assert.rejects(async () => {
    for await (const event of client.runs.events(run.id, { signal: controller.signal })) {
      seen.push(event.type);
      if (event.type === "run.created") controller.abort(new Error("enough"));
    }
  }, /enough/);
  assert.deepEqual(seen, ["run.created"]);
  await client.runs.cancel(run.id);
});
