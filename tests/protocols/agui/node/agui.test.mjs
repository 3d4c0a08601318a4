// The AG-UI endpoint driven by the protocol's own client: @ag-ui/client's HttpAgent, as
// a frontend runs it. Started by tests/protocols/agui/test_node_client.py against real
// `agentrun api` and `agentrun worker` processes, with AGUI_BASE_URL (the API's origin)
// and AGUI_KEY (an API key); the agents `weather` and `payer` exist (see that test).
import assert from "node:assert/strict";
import { test } from "node:test";
import { HttpAgent, buildResumeArray } from "@ag-ui/client";

const BASE = process.env.AGUI_BASE_URL;
const KEY = process.env.AGUI_KEY;
assert.ok(BASE && KEY, "AGUI_BASE_URL and AGUI_KEY must be set");

const WEATHER = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } } },
};
const PAY = {
  name: "pay",
  description: "Pay an amount",
  parameters: { type: "object", properties: { amount: { type: "number" } } },
};

function agent(name, threadId) {
  return new HttpAgent({
    url: `${BASE}/ag-ui/${name}`,
    headers: { Authorization: `Bearer ${KEY}` },
    threadId,
  });
}

// One `runAgent`: the events it received and how it finished.
async function run(a, parameters) {
  const seen = [];
  let finished;
  let failed;
  await a.runAgent(parameters, {
    onEvent: ({ event }) => {
      seen.push(event);
    },
    onRunFinishedEvent: (params) => {
      finished = params;
    },
    onRunErrorEvent: ({ event }) => {
      failed = event;
    },
  });
  assert.equal(failed, undefined, `RUN_ERROR: ${JSON.stringify(failed)}`);
  assert.ok(finished, "the stream ended without RUN_FINISHED");
  return { seen, finished, types: seen.map((e) => e.type) };
}

const text = (seen) =>
  seen.filter((e) => e.type === "TEXT_MESSAGE_CONTENT").map((e) => e.delta).join("");

test("a frontend tool: its call is pending, a tool message answers it, the answer streams", async () => {
  const a = agent("weather", `thread-weather-${process.pid}`);
  a.addMessage({ id: "u1", role: "user", content: "What is the weather in Paris?" });

  const first = await run(a, { tools: [WEATHER] });
  assert.equal(first.types[0], "RUN_STARTED");
  const start = first.seen.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(start.toolCallName, "get_weather");
  const args = first.seen.filter((e) => e.type === "TOOL_CALL_ARGS" && e.toolCallId === start.toolCallId);
  assert.deepEqual(JSON.parse(args.map((e) => e.delta).join("")), { city: "Paris" });
  assert.ok(first.types.includes("TOOL_CALL_END"));
  assert.equal(first.finished.outcome, "success");
  assert.deepEqual(first.finished.pendingToolCallIds, [start.toolCallId]);

  // The application runs the tool and answers with a ToolMessage: the same run goes on.
  a.addMessage({ id: "t1", role: "tool", toolCallId: start.toolCallId, content: "sunny, 21 C" });
  const second = await run(a, { tools: [WEATHER] });
  assert.equal(second.types[0], "RUN_STARTED");
  assert.ok(second.types.includes("TEXT_MESSAGE_START"));
  assert.ok(second.types.includes("TEXT_MESSAGE_END"));
  assert.equal(text(second.seen), "The weather: sunny, 21 C");
  assert.equal(second.finished.outcome, "success");
  assert.deepEqual(second.finished.pendingToolCallIds, []);
  assert.equal(second.finished.result, "The weather: sunny, 21 C");
  assert.equal(
    first.seen[0].metadata.agentrun.run_id,
    second.seen[0].metadata.agentrun.run_id,
    "the tool message continues the same run",
  );
  // The client's own record of the thread holds the call and the answer.
  const assistant = a.messages.filter((m) => m.role === "assistant");
  assert.equal(assistant.at(-1).content, "The weather: sunny, 21 C");
});

test("an approval-gated tool: an interrupt, resumed by a resume entry", async () => {
  const a = agent("payer", `thread-payer-${process.pid}`);
  a.addMessage({ id: "u1", role: "user", content: "Pay 500 to Bob" });

  const first = await run(a, { tools: [PAY] });
  assert.equal(first.finished.outcome, "interrupt");
  const [interrupt] = first.finished.interrupts;
  const call = first.seen.find((e) => e.type === "TOOL_CALL_START");
  assert.equal(interrupt.reason, "tool_approval");
  assert.equal(interrupt.toolCallId, call.toolCallId);
  assert.deepEqual(interrupt.metadata.arguments, { amount: 500 });
  assert.ok(interrupt.expiresAt, "an approval says when it stops being answerable");
  assert.deepEqual(a.pendingInterrupts.map((i) => i.id), [interrupt.id]);

  // Approved: the call is the frontend's to run now.
  const resume = buildResumeArray(a.pendingInterrupts, {
    [interrupt.id]: { status: "resolved", payload: { action: "approve" } },
  });
  const second = await run(a, { tools: [PAY], resume });
  assert.equal(second.finished.outcome, "success");
  assert.deepEqual(second.finished.pendingToolCallIds, [call.toolCallId]);
  assert.deepEqual(a.pendingInterrupts, []);

  a.addMessage({ id: "t1", role: "tool", toolCallId: call.toolCallId, content: "paid" });
  const third = await run(a, { tools: [PAY] });
  assert.equal(third.finished.outcome, "success");
  assert.equal(text(third.seen), "The payment: paid");
});

test("a rejected approval: the model is told, and answers", async () => {
  const a = agent("payer", `thread-reject-${process.pid}`);
  a.addMessage({ id: "u1", role: "user", content: "Pay 500 to Bob" });
  const first = await run(a, { tools: [PAY] });
  const [interrupt] = first.finished.interrupts;
  const resume = buildResumeArray(a.pendingInterrupts, {
    [interrupt.id]: { status: "resolved", payload: { action: "reject", message: "Not today." } },
  });
  const second = await run(a, { tools: [PAY], resume });
  assert.equal(second.finished.outcome, "success");
  const result = second.seen.find((e) => e.type === "TOOL_CALL_RESULT");
  assert.equal(result.toolCallId, interrupt.toolCallId);
  assert.match(result.content, /Not today\./);
  assert.equal(text(second.seen), "The payment: Error: Not today.");
});

test("a wrong key is the protocol's HTTP error before any stream", async () => {
  const a = new HttpAgent({
    url: `${BASE}/ag-ui/weather`,
    headers: { Authorization: "Bearer not-a-key" },
    threadId: `thread-wrong-${process.pid}`,
  });
  a.addMessage({ id: "u1", role: "user", content: "hello" });
  await assert.rejects(a.runAgent({ tools: [WEATHER] }), (err) => {
    assert.equal(err.status, 401);
    // (an RFC 9457 problem: application/problem+json, which the client hands over as text)
    assert.equal(JSON.parse(err.payload).type, "/problems/unauthorized");
    return true;
  });
});
