"""A suspension for tool calls, as data: the round's rows, the calls its approval policies
gate, and the `requires_action` document an executor is handed. Pure but for the clock
it is given and a warning for a policy that cannot be evaluated."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import structlog

from app.core import CallTools
from app.core.lifecycle import ApprovalStatus
from app.core.serde import tool_result_to_dict
from app.service import gates
from app.store.config import RunConfig
from app.store.records import NewToolCall
from app.timestamps import iso

log = structlog.get_logger("agentrun.worker")


def rows(step: CallTools, config: RunConfig) -> list[NewToolCall]:
    """The round's pending calls, in the run's order: the run's own (preresolved) with
    their result, the others on the queue their tool names (if any)."""
    return [
        NewToolCall(
            position=i,
            call_id=p.tool_call.id,
            name=p.tool_call.name,
            arguments=p.tool_call.arguments,
            preresolved_result=None
            if p.preresolved_result is None
            else tool_result_to_dict(p.preresolved_result),
            queue=config.queue_of(p.tool_call.name) if p.preresolved_result is None else None,
        )
        for i, p in enumerate(step.calls)
    ]


def gate(
    config: RunConfig, rows: list[NewToolCall], round: int, clock: Callable[[], datetime]
) -> dict[str, Any] | None:
    """Mark the calls the run's approval policies gate (in place: no queue until
    approved, a deadline when the run has an `approval_timeout`); the data of the
    `run.approval_required` event, or None when no call is gated."""
    timeout = config.approval_timeout
    due = None if timeout is None else clock() + timedelta(seconds=timeout)
    approvals = []
    for i, r in enumerate(rows):
        if r.preresolved_result is None and gated(config, r, round):
            rows[i] = dataclasses.replace(
                r, queue=None, approval=ApprovalStatus.PENDING.value, approval_due_at=due
            )
            approvals.append(gates.approval_doc(r.call_id, r.name, r.arguments, i))
    if not approvals:
        return None
    return {"round": round, "approvals": approvals, "due_at": iso(due) if due else None}


def gated(config: RunConfig, row: NewToolCall, round: int) -> bool:
    """Whether the run's policy gates `row`; a policy that cannot be evaluated (a rule
    stored before rules were checked at create) gates it, never crashes the drive."""
    try:
        return gates.gated(config.approval_of(row.name), row.arguments)
    except Exception as exc:  # (any failure of a rule: the call waits)
        log.warning(
            "approval.rule_failed",
            tool=row.name,
            tool_call_id=row.call_id,
            round=round,
            error=f"{type(exc).__name__}: {exc}",
        )
        return True


def requires_action(rows: list[NewToolCall], round: int, callback_url: str) -> dict[str, Any]:
    """What the executor is handed: the calls it owes a result (not the run's own, not
    those awaiting a decision) and where to send the results."""
    return {
        "round": round,
        "tool_calls": [
            {"id": r.call_id, "name": r.name, "arguments": r.arguments}
            | ({"queue": r.queue} if r.queue is not None else {})
            for r in rows
            if r.preresolved_result is None and r.approval is None
        ],
        "callback_url": callback_url,
    }
