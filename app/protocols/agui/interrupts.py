"""A suspended run's waits a person answers, as AG-UI interrupts, and the `resume`
entries that answer them. A gated tool call (an approval) is one interrupt: its id names
the call, its place in the round and the hash of the arguments the person saw, so an
answer carries them back and a decision on arguments that changed is refused as stale.
A run suspended on its budget or on an invalid tool call (`invalid_tool_call: ask`) is
one interrupt too, which only an operator answers (raising the limits, resolving the
call): a `cancelled` entry cancels the run (while it waits on that interrupt: else the
entry names no interrupt of the run), a `resolved` one continues the stream."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, get_args

from ag_ui.core import Interrupt, ResumeEntry, ResumeStatus
from pydantic import ValidationError

from app.core.lifecycle import TERMINAL, RunStatus
from app.service import convert
from app.service.errors import InvalidRequest
from app.service.runs import RunView
from app.service.schemas import DecisionIn
from app.service.types import Budget, RunRecord, ToolCallRecord
from app.timestamps import iso

#: The reason of an approval's interrupt (AG-UI leaves the vocabulary open).
APPROVAL = "tool_approval"
#: The ids of the interrupts only an operator answers.
BUDGET = "budget"
RESOLUTION = "invalid_tool_call"

#: A resume entry's statuses, AG-UI's words: answered, or abandoned.
RESOLVED, ABANDONED = get_args(ResumeStatus)

#: What a resolved approval's `payload` holds (its `response_schema`).
DECISION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"enum": ["approve", "reject"]},
        "arguments": {
            "type": "object",
            "description": "approve: run the call with these arguments instead",
        },
        "message": {"type": "string", "description": "reject: what the model is told"},
    },
    "required": ["action"],
    "additionalProperties": False,
}


def approval_id(call: ToolCallRecord) -> str:
    """`<call id>@<position>#<arguments hash>`: the call, its place, what was approved."""
    return f"{call.call_id}@{call.position}#{convert.canonical_hash(call.arguments)}"


def approval_interrupt(call: ToolCallRecord, record: RunRecord) -> Interrupt:
    arguments = convert.canonical_hash(call.arguments)
    due = call.approval_due_at or record.expires_at
    return Interrupt(
        id=approval_id(call),
        reason=APPROVAL,
        message=f"The agent wants to call {call.name}: approve or reject it.",
        tool_call_id=call.call_id,
        response_schema=DECISION_SCHEMA,
        expires_at=_iso(due),
        metadata={
            "name": call.name,
            "arguments": call.arguments,
            "arguments_hash": arguments,
            "position": call.position,
        },
    )


def operator_waits(view: RunView) -> str | None:
    """The operator's interrupt the run waits on (`BUDGET`, `RESOLUTION`), if any."""
    record = view.record
    if record.status != RunStatus.REQUIRES_ACTION:
        return None
    if isinstance(record.waiting, Budget):
        return BUDGET
    return RESOLUTION if view.resolution is not None else None


def operator_interrupt(record: RunRecord) -> Interrupt:
    """The run's wait on its budget or on a resolution, which AG-UI cannot answer."""
    waiting = record.waiting_reason or {}
    if isinstance(record.waiting, Budget):
        return Interrupt(
            id=BUDGET,
            reason=BUDGET,
            message=(
                f"The run reached its {waiting.get('limit')} limit; an operator may raise "
                "it (resume with status cancelled to cancel the run)."
            ),
            expires_at=_iso(record.expires_at),
            metadata={"waiting_reason": waiting},
        )
    return Interrupt(
        id=RESOLUTION,
        reason=RESOLUTION,
        message=(
            f"The model called {waiting.get('tool_name')!r}, which it may not; an operator "
            "resolves it (resume with status cancelled to cancel the run)."
        ),
        tool_call_id=waiting.get("tool_call_id"),
        expires_at=_iso(record.expires_at),
        metadata={"waiting_reason": waiting},
    )


def _iso(when: datetime | None) -> str | None:
    return None if when is None else iso(when)


@dataclass(frozen=True, slots=True)
class Resumed:
    """What a request's `resume` entries ask: decisions on gated calls, and the
    operator's interrupts abandoned (`(entry index, interrupt id)`: cancel the run)."""

    decisions: list[DecisionIn]
    cancels: list[tuple[int, str]]

    def cancel(self, view: RunView) -> bool:
        """Whether the entries cancel the run of `view`: each abandoned interrupt is the
        one it waits on (else 422, as for an id this service never made); a run that has
        ended is left as it is (a retry: its stream shows how it ended)."""
        if not self.cancels or view.record.status in TERMINAL:
            return False
        waits = operator_waits(view)
        for i, interrupt_id in self.cancels:
            if interrupt_id != waits:
                raise InvalidRequest(
                    f"resume[{i}].interruptId: the run {view.record.id} does not wait on "
                    f"{interrupt_id!r} (it is {view.record.status.value}): no interrupt of "
                    "the thread has this id"
                )
        return True


def resumed(entries: Sequence[ResumeEntry]) -> Resumed:
    """The entries as decisions (`cancelled`: a rejection); 422 naming the entry that
    answers no interrupt this service makes or whose payload is not a decision."""
    decisions: list[DecisionIn] = []
    cancels: list[tuple[int, str]] = []
    for i, entry in enumerate(entries):
        where = f"resume[{i}]"
        if entry.interrupt_id in (BUDGET, RESOLUTION):
            if entry.status == ABANDONED:
                cancels.append((i, entry.interrupt_id))
            continue
        call_id, position, hash_ = _parsed(entry.interrupt_id, where)
        if entry.status == ABANDONED:
            decisions.append(_decision(call_id, position, hash_, "reject", where))
            continue
        payload = entry.payload
        if not isinstance(payload, dict) or payload.get("action") not in ("approve", "reject"):
            raise InvalidRequest(
                f'{where}.payload: a decision is {{"action": "approve" | "reject"}}, '
                'optionally with "arguments" (approve) or "message" (reject)'
            )
        extra = set(payload) - {"action", "arguments", "message"}
        if extra:
            raise InvalidRequest(f"{where}.payload: unknown field {sorted(extra)[0]!r}")
        decisions.append(
            _decision(
                call_id,
                position,
                hash_,
                payload["action"],
                where,
                message=payload.get("message"),
                arguments=payload.get("arguments"),
            )
        )
    return Resumed(decisions, cancels)


def _parsed(interrupt_id: str, where: str) -> tuple[str, int, str]:
    head, sep, hash_ = interrupt_id.rpartition("#")
    call_id, at, position = head.rpartition("@")
    if not (sep and at and call_id and position.isascii() and position.isdigit() and hash_):
        raise InvalidRequest(f"{where}.interruptId: no interrupt of this service has this id")
    return call_id, int(position), hash_


def _decision(
    call_id: str,
    position: int,
    hash_: str,
    action: Literal["approve", "reject"],
    where: str,
    **fields: Any,
) -> DecisionIn:
    doc = {
        "tool_call_id": call_id,
        "position": position,
        "arguments_hash": hash_,
        "action": action,
        **{k: v for k, v in fields.items() if v is not None},
    }
    try:
        return DecisionIn.model_validate(doc)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise InvalidRequest(f"{where}.payload.{field}: {error['msg']}") from None
