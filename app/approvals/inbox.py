"""The dashboard's approvals inbox: which pending calls a page lists (`InboxFilter`,
`InboxRow`) and what it shows beside each, so that a person can judge it: its run's
prompt (the first user message), the model's text of the turn that asked for the call,
and the other calls of that round (`Context`).

Read for a whole page at once (`app.approvals.rows`: a run's first and latest log
batches, every call of the page's rounds), never per card; the batches are decoded here
(`app.core.stored.batch_messages`), not the whole run. Pure but for those reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.core import AssistantMessage, Message, Text, ToolCall, UserMessage
from app.core.errors import StateDecodeError
from app.core.scope import Scope
from app.core.stored import batch_messages
from app.store.run_records import ToolCallRecord

#: A gated call's key: (run id, round, position).
CallKey = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class InboxFilter:
    """Which pending approvals a page lists: of `scope`'s runs, of tool `tool` and of
    runs started from agent `agent` (None: any)."""

    scope: Scope
    tool: str | None = None
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class InboxRow:
    """A pending approval as the dashboard's inbox lists it: the call, and the agent its
    run started from (None: none)."""

    call: ToolCallRecord
    agent_name: str | None
    agent_version: str | None


@dataclass(frozen=True, slots=True)
class Context:
    """A run's context of its waiting round. `prompt` and `model_text` are None when
    the run's log does not hold them (`unreadable` says why when it cannot be read);
    `round_calls` are every call of the round, the gated ones among them."""

    prompt: str | None
    model_text: str | None
    round_calls: tuple[ToolCallRecord, ...]
    unreadable: str | None = None


def text_of(message: Message) -> str:
    """The text items of a user or assistant message (tool calls, results, reasoning and
    images left out), one paragraph each."""
    if not isinstance(message, UserMessage | AssistantMessage):
        return message.content
    return "\n\n".join(i.text for i in message.content if isinstance(i, Text))


def prompt_of(messages: Sequence[Message]) -> str | None:
    """The text of the first user message."""
    for m in messages:
        if isinstance(m, UserMessage):
            return text_of(m)
    return None


def asking_turn(messages: Sequence[Message], call_ids: set[str]) -> AssistantMessage | None:
    """The latest model turn that asked for one of `call_ids`."""
    for m in reversed(messages):
        if isinstance(m, AssistantMessage) and any(
            isinstance(i, ToolCall) and i.id in call_ids for i in m.content
        ):
            return m
    return None


def context_of(batches: Sequence[str], calls: Sequence[ToolCallRecord]) -> Context:
    """A run's context from its first and latest log batches (`batches`, in order) and
    the calls of its waiting round."""
    try:
        decoded = [batch_messages(body) for body in batches]
    except StateDecodeError as exc:
        return Context(None, None, tuple(calls), f"its log cannot be read here: {exc}")
    own = [m for _, messages in decoded[:1] for m in messages]
    history = [m for h, _ in decoded[:1] for m in h]
    turn = asking_turn(decoded[-1][1] if decoded else [], {c.call_id for c in calls})
    return Context(
        prompt_of(own) if prompt_of(own) is not None else prompt_of(history),
        None if turn is None else text_of(turn),
        tuple(calls),
    )


def contexts_of(
    batches: dict[str, list[str]], calls: Sequence[ToolCallRecord]
) -> dict[str, Context]:
    """Each run's context (keyed by run id) from its log's ends and its round's calls."""
    by_run: dict[str, list[ToolCallRecord]] = {run_id: [] for run_id in batches}
    for c in calls:
        by_run.setdefault(c.run_id, []).append(c)
    return {run_id: context_of(batches.get(run_id, []), rows) for run_id, rows in by_run.items()}
