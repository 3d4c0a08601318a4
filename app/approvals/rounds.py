"""The approvals' round gate: a worker suspending a run for a tool round marks the calls
the run's approval policies gate (`app.approvals.policies`), so that no executor sees
them before a decision. Pure but for the clock it is given and a warning for a policy
that cannot be evaluated."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import structlog

from app.approvals import policies
from app.core.lifecycle import ApprovalStatus
from app.store.config import RunConfig
from app.store.run_records import NewToolCall
from app.timestamps import iso

log = structlog.get_logger("agentrun.worker")


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
        # (an agent tool's call is its child run's: the child's own tools are gated)
        if r.preresolved_result is None and not r.child_run_id and gated(config, r, round):
            rows[i] = dataclasses.replace(
                r, queue=None, approval=ApprovalStatus.PENDING.value, approval_due_at=due
            )
            approvals.append(policies.approval_doc(r.call_id, r.name, r.arguments, i))
    if not approvals:
        return None
    return {"round": round, "approvals": approvals, "due_at": iso(due) if due else None}


def gated(config: RunConfig, row: NewToolCall, round: int) -> bool:
    """Whether the run's policy gates `row`; a policy that cannot be evaluated (a rule
    stored before rules were checked at create) gates it, never crashes the drive."""
    try:
        return policies.gated(config.approval_of(row.name), row.arguments)
    except Exception as exc:  # (any failure of a rule: the call waits)
        log.warning(
            "approval.rule_failed",
            tool=row.name,
            tool_call_id=row.call_id,
            round=round,
            error=f"{type(exc).__name__}: {exc}",
        )
        return True
