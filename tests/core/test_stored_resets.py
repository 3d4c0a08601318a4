"""A log batch that resets (`app.core.stored.rewrite`): its lists replace the run's
conversation on load, its completion calls still append, and the batches before it
keep the original messages."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from app.core import (
    AgentRun,
    Message,
    ModelTurn,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
    stored,
)
from app.core.errors import StateDecodeError

TOOLS = frozenset({"look"})


def log_of(*batches: stored.Batch | None) -> str:
    return "[" + ",".join(b.body for b in batches if b is not None) + "]"


def tool_turn(loaded: stored.Loaded, n: int) -> None:
    """One model turn asking for a tool, and its result: the run gains two messages."""
    run = loaded.run
    run.next_step()
    call = ToolCall.from_wire(f"call_{n}", "look", {"n": n})
    turn = ModelTurn(
        choice=(call,),
        usage=Usage(input_tokens=10 * n, output_tokens=1, total_tokens=10 * n + 1),
        executable_tool_names=TOOLS,
        allowed_tool_names=TOOLS,
        message_id=f"msg_{n}",
    )
    run.model_response(turn)
    run.next_step()
    run.tool_results([ToolResult.text(call, f"result {n}")])


def rewritten(run: AgentRun, history: tuple[Message, ...] | None, keep: int) -> AgentRun:
    """`run` with a summary in place of all but its last `keep` messages."""
    messages = run.messages()
    new = [UserMessage("summary of the older turns"), *messages[-keep:]]
    state = dataclasses.replace(run.state, chat_history=history, new_messages=new)
    return AgentRun.from_state(state)


@pytest.mark.parametrize("history", [None, (SystemMessage("be brief"), UserMessage("earlier"))])
def test_a_reset_batch_replaces_the_conversation_and_keeps_the_originals(
    history: tuple[Message, ...] | None,
) -> None:
    first = stored.initial(AgentRun("start", max_turns=10, history=history))
    loaded = stored.load(first.control, log_of(first.batch))
    tool_turn(loaded, 1)
    tool_turn(loaded, 2)
    second = stored.snapshot(loaded)
    before = loaded.run
    kept_history = None if history is None else history[:1]
    stored.rewrite(loaded, rewritten(before, kept_history, 2))
    third = stored.snapshot(loaded)
    assert third.batch is not None and third.batch.seq == 3
    assert stored.resets(third.batch.body)
    assert not stored.resets(first.batch.body) and not stored.resets(second.batch.body)
    body = orjson.loads(third.batch.body)
    assert "c" not in body  # (no model call since: the calls are not rewritten)
    h, m = stored.batch_messages(third.batch.body)
    assert h == list(kept_history or []) and m[0] == UserMessage("summary of the older turns")
    log = log_of(first.batch, second.batch, third.batch)
    again = stored.load(third.control, log)
    assert again.run.to_json() == loaded.run.to_json()
    assert again.run.state.chat_history == kept_history
    assert len(again.run.messages()) == 3
    assert len(again.run.completion_calls()) == 2  # (both calls: only messages reset)
    # The batches before it still hold every original message.
    originals = [
        msg
        for b in (first.batch, second.batch)
        for part in stored.batch_messages(b.body)
        for msg in part
    ]
    assert originals == list(before.full_history())

    # Later batches append to the rewritten lists; a control-only load goes on from them.
    tool_turn(again, 3)
    fourth = stored.snapshot(again)
    assert fourth.batch is not None and not stored.resets(fourth.batch.body)
    log = log_of(first.batch, second.batch, third.batch, fourth.batch)
    full = stored.load(fourth.control, log)
    assert full.run.to_json() == again.run.to_json()
    assert len(full.run.messages()) == 5 and len(full.run.completion_calls()) == 3
    light = stored.load(fourth.control, control_only=True)
    assert light.base == (5, 3)
    with pytest.raises(StateDecodeError, match="without its log"):
        stored.rewrite(light, full.run)


def test_a_reset_batch_holds_the_messages_added_since_the_last_batch() -> None:
    """A run that gained messages since its last batch and is rewritten in the same
    claim: the reset batch holds them first (`appended`), so none is lost from the log."""
    first = stored.initial(AgentRun("start", max_turns=10))
    loaded = stored.load(first.control, log_of(first.batch))
    tool_turn(loaded, 1)
    second = stored.snapshot(loaded)
    tool_turn(loaded, 2)
    tool_turn(loaded, 3)
    unlogged = loaded.run.messages()[3:]
    assert len(unlogged) == 4
    stored.rewrite(loaded, rewritten(loaded.run, None, 2))
    third = stored.snapshot(loaded)
    assert third.batch is not None and stored.resets(third.batch.body)
    assert stored.appended(third.batch.body) == list(unlogged)
    assert stored.appended(second.batch.body) == []  # type: ignore[union-attr]
    again = stored.load(third.control, log_of(first.batch, second.batch, third.batch))
    assert again.run.to_json() == loaded.run.to_json()
    assert len(again.run.messages()) == 3
    fourth = stored.snapshot(again)
    assert fourth.batch is None  # (nothing new: nothing appended twice)


def test_a_finished_run_after_a_reset_loads_its_response() -> None:
    first = stored.initial(AgentRun("start", max_turns=10))
    loaded = stored.load(first.control, log_of(first.batch))
    tool_turn(loaded, 1)
    tool_turn(loaded, 2)
    stored.rewrite(loaded, rewritten(loaded.run, None, 1))
    second = stored.snapshot(loaded)
    run = loaded.run
    run.next_step()
    run.model_response(ModelTurn(choice=(Text("done"),), usage=Usage(1, 1, 2)))
    done = run.next_step()
    third = stored.snapshot(loaded)
    again = stored.load(third.control, log_of(first.batch, second.batch, third.batch))
    assert again.run.is_done()
    response = again.run.response()
    assert response is not None and response.output == "done"
    assert response.messages == run.messages() == done.response.messages  # type: ignore[attr-defined]
    assert again.run.to_json() == run.to_json()


def test_a_rewrite_keeps_the_calls_it_had() -> None:
    first = stored.initial(AgentRun("start", max_turns=10))
    loaded = stored.load(first.control, log_of(first.batch))
    tool_turn(loaded, 1)
    stored.snapshot(loaded)
    with pytest.raises(StateDecodeError, match="completion calls"):
        stored.rewrite(loaded, AgentRun("other", max_turns=10))


def test_a_reset_batch_of_an_older_schema_version_still_resets() -> None:
    """A batch upgraded on load (`_current`) keeps its reset mark."""
    first = stored.initial(AgentRun("start", max_turns=10))
    loaded = stored.load(first.control, log_of(first.batch))
    tool_turn(loaded, 1)
    stored.rewrite(loaded, rewritten(loaded.run, None, 1))
    second = stored.snapshot(loaded)
    assert second.batch is not None
    body = orjson.loads(second.batch.body)
    body["v"] = 1  # (an older version whose messages read the same)
    body["a"] = body["m"][:1]
    old = stored.Batch(2, orjson.dumps(body).decode())
    assert stored.resets(old.body)
    assert stored.appended(old.body) == stored.batch_messages(old.body)[1][:1]
    again = stored.load(second.control, log_of(first.batch, old))
    assert again.run.to_json() == loaded.run.to_json()
