"""Builds one run in each state; run as a script it writes tests/core/fixtures/v{N}_*.json for
the current schema version N (v1 by the release that introduced the fixtures, v2 when tool
results gained `is_error`). The tests check that every stored generation still loads and
continues correctly, and that the newest equals what this release writes."""

from __future__ import annotations

from collections.abc import Callable

from app.core import (
    AgentRun,
    Fail,
    Reasoning,
    Skip,
    SystemMessage,
    ToolChoice,
    UnknownToolCall,
    UserMessage,
)
from tests.core.support import C, R, T, turn, usage


def _base() -> AgentRun:
    return AgentRun(
        "add things",
        max_turns=4,
        history=[SystemMessage("be brief"), UserMessage("earlier")],
        tool_choice=ToolChoice.auto(),
        max_invalid_tool_call_retries=1,
    )


def preparing() -> AgentRun:
    return _base()


def awaiting_model() -> AgentRun:
    run = _base()
    run.next_step()
    return run


def resolving() -> AgentRun:
    run = awaiting_model()
    run.model_response(
        turn(
            Reasoning.of_text("hmm", signature="sig_1"),
            C("call_1", "bad"),
            C("call_2", "add"),
            usage=usage(10, 5),
            message_id="msg_1",
            finish_reason="tool_calls",
            raw={"id": "resp_1"},
        )
    )
    return run


def awaiting_advance() -> AgentRun:
    run = resolving()
    run.resolve_invalid_tool_call(Skip("not available"))
    return run


def executing() -> AgentRun:
    run = awaiting_advance()
    run.next_step()
    return run


def done() -> AgentRun:
    run = executing()
    run.tool_results([R("call_1", "not available", "bad"), R("call_2", "2")])
    run.next_step()
    run.model_response(T("the answer is 2", usage=usage(20, 7), finish_reason="stop"))
    run.next_step()
    return run


def failed() -> AgentRun:
    run = resolving()
    try:
        run.resolve_invalid_tool_call(Fail())
    except UnknownToolCall:
        pass
    return run


STATES: dict[str, Callable[[], AgentRun]] = {
    "PreparingRequest": preparing,
    "AwaitingModel": awaiting_model,
    "ResolvingToolCalls": resolving,
    "AwaitingAdvance": awaiting_advance,
    "ExecutingTools": executing,
    "Done": done,
    "Failed": failed,
}

if __name__ == "__main__":
    from pathlib import Path

    from app.core import SCHEMA_VERSION

    out = Path(__file__).parent / "fixtures"
    for name, build in STATES.items():
        run = build()
        assert run.status == name, (name, run.status)
        (out / f"v{SCHEMA_VERSION}_{name}.json").write_text(run.to_json() + "\n")
