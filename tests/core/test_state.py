"""A run's data as one value (`RunState`): taken from a run as a copy, continued from by
`AgentRun.from_state`, and stored field by field exactly as `to_json` stores the run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import app.core
from app.core import (
    AgentRun,
    Repair,
    RunState,
    UserMessage,
)
from app.core.phases import Resolving
from app.core.serde import loads, state_from_dict, state_to_dict
from tests.core.support import R, T, expect_call_model
from tests.core.v1_states import STATES


def outcome(call: Callable[[], Any]) -> tuple[Any, ...]:
    try:
        return ("returned", call())
    except Exception as exc:
        return ("raised", type(exc), str(exc))


@pytest.mark.parametrize("name", sorted(STATES))
def test_a_run_continues_from_its_state_exactly(name: str) -> None:
    run = STATES[name]()
    twin = AgentRun.from_state(run.state)
    assert twin.to_json() == run.to_json()
    assert twin.status == run.status
    for _ in range(3):
        assert outcome(twin.next_step) == outcome(run.next_step)
        assert twin.to_json() == run.to_json()


@pytest.mark.parametrize("name", sorted(STATES))
def test_the_state_is_stored_and_read_back_field_by_field(name: str) -> None:
    run = STATES[name]()
    state = run.state
    assert loads(run.to_json()) == state
    assert state_from_dict(state_to_dict(state)) == state


def test_changing_a_taken_state_leaves_the_run_alone() -> None:
    run = STATES["ResolvingToolCalls"]()
    before = run.to_json()
    state = run.state
    assert isinstance(state.phase, Resolving)
    state.phase.items.clear()
    state.phase.skipped[0] = R("call_1", "sneaked in")
    state.phase.next_index = 0
    state.new_messages.append(UserMessage("sneaked in"))
    state.completion_calls.clear()
    state.max_turns = 99
    assert run.to_json() == before
    untouched = STATES["ResolvingToolCalls"]()
    repair = Repair("add")
    assert outcome(lambda: run.resolve_invalid_tool_call(repair)) == outcome(
        lambda: untouched.resolve_invalid_tool_call(repair)
    )
    assert run.to_json() == untouched.to_json()


def test_a_run_does_not_follow_later_changes_to_the_state_it_came_from() -> None:
    state = STATES["ResolvingToolCalls"]().state
    run = AgentRun.from_state(state)
    before = run.to_json()
    assert isinstance(state.phase, Resolving)
    state.phase.items.clear()
    state.new_messages.clear()
    state.current_turn = 7
    assert run.to_json() == before


def test_a_fresh_state_is_a_fresh_run() -> None:
    state = RunState(max_turns=2, new_messages=[UserMessage("hi")])
    run = AgentRun.from_state(state)
    assert run.to_json() == AgentRun("hi", max_turns=2).to_json()
    expect_call_model(run)
    run.model_response(T("hello"))
    assert run.messages() == (UserMessage("hi"),)  # the state it came from is unchanged:
    assert state.new_messages == [UserMessage("hi")] and state.current_turn == 0


def test_from_state_takes_only_a_state() -> None:
    with pytest.raises(TypeError, match="RunState"):
        AgentRun.from_state({"max_turns": 1})  # type: ignore[arg-type]


def test_mid_stream_resolution_is_not_public() -> None:
    """The worker resolves invalid calls of a streamed turn through the blocking path
    (`app.worker.streaming`); upstream's mid-stream resolution stays in the port, private."""
    public = set(app.core.__all__)
    for name in (
        "PartialStreamedTurn",
        "StreamedInvalidToolCall",
        "StreamedResolution",
        "Repaired",
        "TurnAbandoned",
    ):
        assert name not in public and not hasattr(app.core, name)
    assert not hasattr(AgentRun, "resolve_streamed_invalid_tool_call")
    assert not hasattr(AgentRun, "streamed_invalid_tool_call_context")
    # What the worker does use stays public.
    assert {"StreamedTurn", "CompletionIdentity", "RunState"} <= public
    assert callable(AgentRun.record_streamed_completion_call)
    assert callable(AgentRun.streamed_turn)
