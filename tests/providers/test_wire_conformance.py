"""Wire conformance (issue 12): every request the three adapters build in real runs is a
valid request of the official SDK's own type, and every answer the SDK's model classes can
express is decoded.

Each scenario drives the real `AgentRun` through the service's own paths (history from the
API's `HistoryMessage` via `convert.history_message`, the worker's `model_turn` /
`ingest_streamed` / `invalid_call_action`, client results via `convert.submitted_result`,
and the run persisted and reloaded while it waits for results), once blocking and once
streamed, on each wire; the answers are built from the SDKs' model classes (`sdk_wire`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from app.core import (
    TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER,
    AgentRun,
    CallModel,
    CallTools,
    Done,
    NeedsResolution,
    ToolChoice,
)
from app.providers.base import ModelRequest
from app.providers.common import ERROR_PREFIX
from app.service import convert
from app.service.schemas import HistoryMessage
from app.worker.streaming import ingest_streamed
from app.worker.turns import invalid_call_action, model_turn
from tests.providers.helpers import ADD, WEATHER
from tests.providers.sdk_wire import CODECS, WIRES, Answer, Call, check_request, decode

PROMPT = "Weather in Oslo, and what is 1+2?"
PREAMBLE = "Be brief."
TOOLS = (ADD, WEATHER)
NAMES = frozenset(t.name for t in TOOLS)
MODELS = {"chat": "gpt-4.1", "responses": "gpt-4.1", "anthropic": "claude-sonnet-4-5"}
REASONING_MODELS = {"chat": "o4-mini", "responses": "o4-mini", "anthropic": "claude-sonnet-4-5"}
PARAMS: dict[str, dict[str, Any]] = {
    "chat": {"temperature": 0.2, "max_completion_tokens": 512},
    "responses": {"temperature": 0.2, "max_output_tokens": 512},
    "anthropic": {"stop_sequences": ["END"], "max_tokens": 1024},
}
REASONING_PARAMS: dict[str, dict[str, Any]] = {
    "chat": {"reasoning_effort": "low"},
    "responses": {"reasoning": {"effort": "low", "summary": "auto"}},
    "anthropic": {"max_tokens": 2048, "thinking": {"type": "enabled", "budget_tokens": 1024}},
}

ADD_CALL = Call("call_a", "add", '{"x": 1, "y": 2}')
WEATHER_CALL = Call("call_w", "get_weather", '{"city": "Oslo"}')
SEARCH_CALL = Call("call_s", "search", '{"city": "Oslo"}')  # not a tool of the run
TNE = TOOL_NOT_EXECUTED_DUE_TO_INVALID_PEER

HISTORY: tuple[dict[str, Any], ...] = (
    {"role": "system", "content": "You are a test."},
    {"role": "user", "content": "What was 2+2?"},
    {"role": "assistant", "content": "4."},  # client-supplied: no id
    {
        "role": "assistant",
        "content": [
            {
                "type": "toolcall",
                "id": "call_h",
                "provider": {"call_id": "call_h"},
                "function": {"name": "add", "arguments": {"x": 2, "y": 2}},
            }
        ],
    },
    {
        "role": "user",
        "content": [
            {
                "type": "toolresult",
                "call": "call_h",
                "provider": {"call_id": "call_h"},
                "name": "add",
                "content": [{"type": "text", "text": "overflow"}],
                "is_error": True,
            }
        ],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "It failed."}]},
    {"role": "system", "content": "Answer in English."},
)


@dataclass(frozen=True)
class Scenario:
    answers: tuple[Answer, ...]
    history: tuple[dict[str, Any], ...] = ()
    policy: dict[str, Any] = field(default_factory=dict)  # the run's invalid_tool_call
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # by call id
    reasoning: bool = False


SCENARIOS = {
    "text": Scenario((Answer(text="Hello!"),)),
    "parallel_tools": Scenario(
        (Answer(text="Both.", calls=(ADD_CALL, WEATHER_CALL)), Answer(text="3; sunny."))
    ),
    "multi_round": Scenario(
        (Answer(calls=(ADD_CALL,)), Answer(calls=(WEATHER_CALL,)), Answer(text="3; sunny."))
    ),
    "tool_errors": Scenario(
        (Answer(calls=(ADD_CALL, WEATHER_CALL)), Answer(text="Both failed.")),
        results={
            "call_a": {"output": "division by zero", "is_error": True},
            "call_w": {"output": {"code": 503}, "is_error": True},
        },
    ),
    "retry": Scenario(
        (Answer(calls=(SEARCH_CALL, ADD_CALL)), Answer(calls=(ADD_CALL,)), Answer(text="3")),
        policy={"action": "retry", "feedback": "No `search`; use get_weather.", "max_retries": 1},
    ),
    "skip": Scenario(
        (Answer(calls=(SEARCH_CALL, ADD_CALL)), Answer(text="Skipped.")),
        policy={"action": "skip", "reason": "`search` is not available."},
    ),
    "repair": Scenario(
        (Answer(calls=(SEARCH_CALL,)), Answer(text="Sunny.")),
        policy={"action": "repair", "repair_to": {"search": "get_weather"}},
    ),
    "history": Scenario((Answer(text="Hello again."),), history=HISTORY),
    "reasoning": Scenario(
        (
            Answer(reasoning="Need the sum.", text="Adding.", calls=(ADD_CALL,)),
            Answer(reasoning="Done adding.", text="3"),
        ),
        reasoning=True,
    ),
}


@dataclass
class Driven:
    bodies: list[dict[str, Any]]
    run: AgentRun


def drive(wire: str, scenario: Scenario, *, stream: bool) -> Driven:
    """The run as the worker drives it; every request checked against the SDK's type."""
    codec = CODECS[wire]
    model = (REASONING_MODELS if scenario.reasoning else MODELS)[wire]
    params = {**PARAMS[wire], **(REASONING_PARAMS[wire] if scenario.reasoning else {})}
    policy = scenario.policy
    history = [convert.history_message(HistoryMessage(**m)) for m in scenario.history]
    run = AgentRun(
        PROMPT,
        max_turns=len(scenario.answers),
        history=history or None,
        tool_choice=ToolChoice.auto(),
        max_invalid_tool_call_retries=policy.get("max_retries", 0),
    )
    bodies: list[dict[str, Any]] = []
    answers = iter(scenario.answers)
    while True:
        step = run.next_step()
        if isinstance(step, Done):
            return Driven(bodies, run)
        if isinstance(step, CallTools):
            results = [
                p.preresolved_result
                or convert.submitted_result(
                    p, scenario.results.get(p.tool_call.id, {"output": f"ok {p.tool_call.name}"})
                )
                for p in step.calls
            ]
            run = AgentRun.from_json(run.to_json())  # suspended, then resumed by a submit
            run.tool_results(results)
            continue
        assert isinstance(step, CallModel)
        request = ModelRequest(
            model=model,
            prompt=step.prompt,
            history=step.history,
            preamble=PREAMBLE,
            tools=TOOLS,
            tool_choice=ToolChoice.auto(),
            params=params,
            turn=step.turn,
        )
        body = codec.encode_request(request, stream=stream)
        check_request(wire, body, stream=stream)
        bodies.append(body)
        answer = decode(wire, next(answers), len(bodies), model, stream=stream)
        turn = model_turn(answer, NAMES, NAMES)
        outcome = ingest_streamed(run, turn) if stream else run.model_response(turn)
        while isinstance(outcome, NeedsResolution):
            action = invalid_call_action(policy, outcome.context)
            assert action is not None
            outcome = run.resolve_invalid_tool_call(action)


def tool_results(wire: str, body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(call id, text, flagged as an error) of every tool result in a request body: the
    Anthropic flag, or the OpenAI wires' `Error: ` convention."""
    out: list[tuple[str, str, bool]] = []
    if wire == "anthropic":
        for message in body["messages"]:
            for block in message["content"] if isinstance(message["content"], list) else ():
                if block["type"] == "tool_result":
                    text = "".join(p["text"] for p in block["content"] if p["type"] == "text")
                    out.append((block["tool_use_id"], text, block.get("is_error", False)))
        return out
    if wire == "chat":
        raw = [(m["tool_call_id"], m["content"]) for m in body["messages"] if m["role"] == "tool"]
    else:
        outputs = [i for i in body["input"] if i["type"] == "function_call_output"]
        raw = [(i["call_id"], i["output"]) for i in outputs]
    for call_id, content in raw:
        text = content if isinstance(content, str) else "".join(p["text"] for p in content)
        flagged = text.startswith(ERROR_PREFIX)
        out.append((call_id, text.removeprefix(ERROR_PREFIX), flagged))
    return out


def without_stream_keys(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in ("stream", "stream_options")}


CASES = [(w, s) for s in SCENARIOS for w in WIRES]


@pytest.mark.parametrize(("wire", "name"), CASES)
def test_every_request_is_valid_and_streaming_sends_what_blocking_sends(
    wire: str, name: str
) -> None:
    blocking = drive(wire, SCENARIOS[name], stream=False)
    streamed = drive(wire, SCENARIOS[name], stream=True)
    assert blocking.run.is_done() and streamed.run.is_done()
    assert len(blocking.bodies) == len(SCENARIOS[name].answers)
    assert [without_stream_keys(b) for b in streamed.bodies] == blocking.bodies
    assert all(b["stream"] is True for b in streamed.bodies)
    assert streamed.run.messages() == blocking.run.messages()
    assert blocking.run.response().output == SCENARIOS[name].answers[-1].text  # type: ignore[union-attr]


@pytest.mark.parametrize("wire", WIRES)
def test_failed_tool_results_reach_the_model_flagged(wire: str) -> None:
    bodies = drive(wire, SCENARIOS["tool_errors"], stream=False).bodies
    assert tool_results(wire, bodies[-1]) == [
        ("call_a", "division by zero", True),
        ("call_w", '{"code":503}', True),
    ]
    ok = drive(wire, SCENARIOS["parallel_tools"], stream=False).bodies
    assert tool_results(wire, ok[-1]) == [
        ("call_a", "ok add", False),
        ("call_w", "ok get_weather", False),
    ]


@pytest.mark.parametrize("wire", WIRES)
@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("retry", [("call_s", "No `search`; use get_weather.", True), ("call_a", TNE, True)]),
        ("skip", [("call_s", "`search` is not available.", True), ("call_a", TNE, True)]),
        ("repair", [("call_s", "ok get_weather", False)]),
    ],
)
def test_invalid_call_feedback_is_flagged(
    wire: str, name: str, expected: list[tuple[str, str, bool]]
) -> None:
    for stream in (False, True):
        bodies = drive(wire, SCENARIOS[name], stream=stream).bodies
        assert tool_results(wire, bodies[1]) == expected


@pytest.mark.parametrize("stream", [False, True])
def test_history_and_preamble_on_each_wire(stream: bool) -> None:
    chat = drive("chat", SCENARIOS["history"], stream=stream).bodies[0]
    assert [m["role"] for m in chat["messages"]] == [
        "system",
        "system",
        "user",
        "assistant",
        "assistant",
        "tool",
        "assistant",
        "system",
        "user",
    ]
    assert chat["messages"][0] == {"role": "system", "content": PREAMBLE}
    responses = drive("responses", SCENARIOS["history"], stream=stream).bodies[0]
    assert responses["instructions"] == PREAMBLE
    assert "include" not in responses  # gpt-4.1 has no encrypted reasoning
    assert {"type": "message", "role": "assistant", "content": "4."} in responses["input"]
    assert {"type": "message", "role": "assistant", "content": "It failed."} in responses["input"]
    claude = drive("anthropic", SCENARIOS["history"], stream=stream).bodies[0]
    assert claude["system"] == [
        {"type": "text", "text": t} for t in (PREAMBLE, "You are a test.", "Answer in English.")
    ]
    for wire, body in (("chat", chat), ("responses", responses), ("anthropic", claude)):
        assert tool_results(wire, body) == [("call_h", "overflow", True)]


@pytest.mark.parametrize("stream", [False, True])
def test_reasoning_is_replayed_where_the_wire_takes_it(stream: bool) -> None:
    responses = drive("responses", SCENARIOS["reasoning"], stream=stream).bodies
    assert all(b["include"] == ["reasoning.encrypted_content"] for b in responses)
    assert responses[1]["input"][1] == {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Need the sum."}],
        "encrypted_content": "gAAAA_1",
    }
    assert responses[1]["input"][2]["id"] == "msg_1"  # the output message keeps its id
    claude = drive("anthropic", SCENARIOS["reasoning"], stream=stream).bodies
    assert claude[1]["messages"][1]["content"][0] == {
        "type": "thinking",
        "thinking": "Need the sum.",
        "signature": "sig_1",
    }
    chat = drive("chat", SCENARIOS["reasoning"], stream=stream).bodies
    assert chat[1]["reasoning_effort"] == "low"
