"""What the dashboard's inbox shows of a run (`app.approvals.inbox`), from its first and
latest log batches: the prompt, the model's text of the turn that asked for the waiting
round's calls (not another turn's), and why not when the log cannot be read."""

from __future__ import annotations

from typing import Any

import orjson

from app.approvals.inbox import context_of, contexts_of
from app.core.serde import SCHEMA_VERSION
from app.store.run_records import ToolCallRecord


def batch(*messages: dict[str, Any], history: list[dict[str, Any]] | None = None) -> str:
    body: dict[str, Any] = {"m": list(messages), "v": SCHEMA_VERSION}
    if history is not None:
        body["h"] = history
    return orjson.dumps(body).decode()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def assistant(text: str, *call_ids: str) -> dict[str, Any]:
    calls = [
        {"type": "toolcall", "id": i, "function": {"name": "refund", "arguments": {}}}
        for i in call_ids
    ]
    return {"role": "assistant", "content": [{"type": "text", "text": text}, *calls]}


def call(call_id: str, run_id: str = "run_1", position: int = 0) -> ToolCallRecord:
    return ToolCallRecord(run_id, 3, position, call_id, "refund", {}, False, None, None, None)


def test_the_prompt_and_the_text_of_the_turn_that_asked() -> None:
    first = batch(user("refund A-1"), history=[user("earlier"), assistant("earlier answer")])
    latest = batch(assistant("looking", "c_1"), user("results"), assistant("refunding", "c_2"))
    context = context_of([first, latest], [call("c_2")])
    assert (context.prompt, context.model_text, context.unreadable) == (
        "refund A-1",
        "refunding",
        None,
    )
    assert [c.call_id for c in context.round_calls] == ["c_2"]
    # A turn that asked for none of the round's calls is not its text.
    assert context_of([first, latest], [call("c_9")]).model_text is None


def test_one_batch_holds_both_and_a_run_without_a_log_shows_neither() -> None:
    only = batch(user("hello"), assistant("on it", "c_1"))
    context = context_of([only], [call("c_1")])
    assert (context.prompt, context.model_text) == ("hello", "on it")
    empty = context_of([], [call("c_1")])
    assert (empty.prompt, empty.model_text, empty.unreadable) == (None, None, None)


def test_a_log_that_cannot_be_read_says_why_and_keeps_the_round() -> None:
    context = context_of(["{not json", batch(user("x"))], [call("c_1")])
    assert context.prompt is None and context.model_text is None
    assert context.unreadable and "not valid JSON" in context.unreadable
    assert [c.call_id for c in context.round_calls] == ["c_1"]


def test_contexts_are_keyed_by_run() -> None:
    batches = {"run_1": [batch(user("one"))], "run_2": [batch(user("two"))]}
    contexts = contexts_of(batches, [call("c_1", "run_1"), call("c_2", "run_2", 1)])
    assert {r: c.prompt for r, c in contexts.items()} == {"run_1": "one", "run_2": "two"}
    assert [c.call_id for c in contexts["run_2"].round_calls] == ["c_2"]
