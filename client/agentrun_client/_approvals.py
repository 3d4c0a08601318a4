"""Decisions on gated tool calls, without IO: what `approvals.approve` / `reject` send
(`POST /v1/runs/{id}/approvals`), and what the inline executor makes of an `on_approval`
callback's answer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

from agentrun_client.errors import InvalidInput
from agentrun_client.models import ApprovalCall


@dataclass(frozen=True, slots=True)
class Approve:
    """Approve the call; with `arguments`, the executor runs these instead of the model's
    (validated by the service against the tool's parameters)."""

    arguments: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Reject:
    """Reject the call: the model gets `message` as the call's error result."""

    message: str


#: What an `on_approval` callback answers for one call: `Approve()`, `Reject(message)`,
#: the edited arguments (a mapping: approve with them), or None to leave it to a person.
Answer: TypeAlias = Approve | Reject | Mapping[str, Any] | None
OnApproval: TypeAlias = Callable[[ApprovalCall], Answer | Awaitable[Answer]]


def decision(
    call_id: str, arguments_hash: str, answer: Approve | Reject, position: int | None = None
) -> dict[str, Any]:
    """One item of a decisions body (`position`: the call's place in its round, needed
    only when two calls of the round share an id)."""
    if not call_id:
        raise InvalidInput("a decision needs the tool call's id")
    if not arguments_hash:
        raise InvalidInput(f"a decision on {call_id} needs the arguments hash it saw")
    item: dict[str, Any] = {"tool_call_id": call_id, "arguments_hash": arguments_hash}
    if position is not None:
        item["position"] = position
    if isinstance(answer, Reject):
        if not isinstance(answer.message, str):
            raise InvalidInput(f"a rejection's message is text, not {type(answer.message)}")
        return {**item, "action": "reject", "message": answer.message}
    item["action"] = "approve"
    if answer.arguments is not None:
        if not isinstance(answer.arguments, Mapping):
            raise InvalidInput("edited arguments are a JSON object (a mapping)")
        item["arguments"] = dict(answer.arguments)
    return item


def decisions_body(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    decisions = [dict(i) for i in items]
    if not decisions:
        raise InvalidInput("no decision to send")
    return {"decisions": decisions}


def as_decision(call: ApprovalCall, answer: Answer) -> dict[str, Any] | None:
    """An `on_approval` answer as a decision on `call` (None: left to a person)."""
    if answer is None:
        return None
    if isinstance(answer, Approve | Reject):
        return decision(call.id, call.arguments_hash, answer, call.position)
    if isinstance(answer, Mapping):
        return decision(call.id, call.arguments_hash, Approve(answer), call.position)
    raise InvalidInput(
        f"on_approval answered {type(answer).__name__} for {call.id}: expected Approve(), "
        "Reject(message), the edited arguments (a mapping) or None"
    )
