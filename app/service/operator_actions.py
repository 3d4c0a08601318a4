"""Operator actions beyond the public API: extend a suspended run's expiry, retry a
failed or expired run from its last durable state, and submit tool results in the
operator's name (a partial submission noted in the event log).

Extending and retrying are each one compare-and-set change (`app.store.changes`) with
their event (naming the actor) in the same transaction, so a refused request changes
nothing and a race has one winner. Each acts on a run of the operator's `tenant` only
(another tenant's run is not found).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, NoReturn

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus, Transition, sources
from app.core.scope import Scope
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict
from app.service.runs import RunService
from app.service.schemas import ToolResultsIn
from app.service.submissions import SubmitOutcome
from app.store import changes
from app.store.run_records import NewEvent, RunRecord
from app.timestamps import iso

#: The longest an operator may extend a suspended run by, in one step.
MAX_EXTENSION_SECONDS = 365 * 24 * 3600


async def extend_expiry(
    service: RunService, run_id: str, seconds: float, actor: str, scope: Scope
) -> RunRecord:
    """Give a suspended run `seconds` more to wait, counted from its current expiry (or from
    now, when that is already past or unset)."""
    if not 0 < seconds <= MAX_EXTENSION_SECONDS:
        raise InvalidRequest(f"seconds must be in (0, {MAX_EXTENSION_SECONDS}]")
    record = await service.owned(run_id, scope)
    if record.status != RunStatus.REQUIRES_ACTION:
        raise RunStateConflict(
            f"cannot extend the expiry of run {run_id}: it is {record.status.value}, "
            "not requires_action",
            record.status.value,
        )
    now = service.clock.now()
    base = record.expires_at if record.expires_at is not None and record.expires_at > now else now
    new_expiry = base + timedelta(seconds=seconds)
    event = NewEvent(
        E.RUN_EXPIRY_EXTENDED,
        {
            "seconds": seconds,
            "previous_expires_at": iso(record.expires_at) if record.expires_at else None,
            "expires_at": iso(new_expiry),
        },
        actor,
    )
    updated, _ = await service.store.apply(
        run_id, changes.extend(record.version, new_expiry, event), now, scope=scope
    )
    if updated is None:
        await _refused(service, run_id, "extend the expiry of")
    return updated


async def retry_run(service: RunService, run_id: str, actor: str, scope: Scope) -> RunRecord:
    """Put a failed or expired run back in the queue; a worker resumes it from the stored
    state (the last durable one: a failed model call never overwrote it)."""
    record = await service.owned(run_id, scope)
    allowed = sources(Transition.RETRY)
    if record.status not in allowed:
        raise RunStateConflict(
            f"cannot retry run {run_id}: it is {record.status.value}, not failed or expired",
            record.status.value,
        )
    for may_reopen in service.store.hooks.may_reopen:  # (a conversation went on from it)
        await may_reopen(record, scope)
    now = service.clock.now()
    change = changes.retry(record.version, record.status, record.error, actor, now)
    updated, _ = await service.store.apply(run_id, change, now, scope=scope)
    if updated is None:
        await _refused(service, run_id, "retry")
    return updated


async def _existing(service: RunService, run_id: str) -> RunRecord:
    record = await service.store.get(run_id, scope=Scope.ALL)  # (read in scope already)
    if record is None:
        raise RunNotFound(f"no run with id {run_id}")
    return record


async def _refused(service: RunService, run_id: str, verb: str) -> NoReturn:
    """Another change won the race between our read and our write."""
    current = await _existing(service, run_id)
    raise RunStateConflict(
        f"cannot {verb} run {run_id}: it is {current.status.value}", current.status.value
    )


async def note(
    service: RunService, run_id: str, event_type: str, data: dict[str, Any], actor: str
) -> RunRecord:
    """Record who did something to a suspended run that has no event of its own naming
    them (e.g. a partial tool-result submission): an event-only compare-and-set."""
    change = changes.note(NewEvent(event_type, data, actor))
    updated, _ = await service.store.apply(run_id, change, service.clock.now(), scope=Scope.ALL)
    if updated is None:
        await _refused(service, run_id, "annotate")
    return updated


async def submit_tool_results(
    service: RunService, run_id: str, body: ToolResultsIn, actor: str, scope: Scope
) -> SubmitOutcome:
    """Submit results as `actor`. A submission that resumes the run is named in its
    `run.resumed` event; one that leaves calls open gets its own event naming the actor
    (`tool_result.submitted_by_operator`)."""
    outcome = await service.submit_tool_results(body, run_id=run_id, actor=actor, scope=scope)
    if not outcome.resumed and outcome.accepted:
        await note(
            service,
            run_id,
            "tool_result.submitted_by_operator",
            {"tool_call_ids": outcome.accepted},
            actor,
        )
    return outcome
