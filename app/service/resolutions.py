"""What a resolution of an invalid tool call does to a run: pure rules.

A run whose invalid-call policy is `ask` waits (`requires_action`, a `resolution`
reason) until someone picks an action; the run's state machine decides the outcome and
this maps it to one change: back to the queue, waiting for the next invalid call's
resolution, or failed.
"""

from __future__ import annotations

from datetime import datetime

from app.core import (
    AgentRunError,
    Continue,
    Fail,
    InvalidToolCallAction,
    NeedsResolution,
    Repair,
    Retry,
    Skip,
    Stop,
    TurnRetried,
    stored,
)
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.service.errors import InvalidRequest, RunStateConflict
from app.service.schemas import ResolutionIn
from app.store import changes
from app.store.changes import Change, Resolution
from app.store.run_records import NewEvent, RunRecord


def action_from(body: ResolutionIn) -> InvalidToolCallAction:
    if body.action == "fail":
        return Fail()
    if body.action == "retry":
        return Retry(body.feedback or "That tool call was invalid; try again.")
    if body.action == "repair":
        if not body.tool_name:
            raise InvalidRequest("repair needs tool_name")
        return Repair(body.tool_name)
    if body.action == "skip":
        return Skip(body.reason or "The tool call was skipped.")
    return Stop(body.reason or "Stopped by an operator.")


def resolution_change(
    record: RunRecord, body: ResolutionIn, actor: str | None, now: datetime
) -> Change:
    """The change resolving `record` (read with its log) with `body` makes."""
    if record.status != RunStatus.REQUIRES_ACTION or not isinstance(record.waiting, Resolution):
        raise RunStateConflict(
            f"run {record.id} is {record.status.value}, not waiting for a resolution",
            record.status.value,
        )
    action = action_from(body)
    loaded = stored.load(record.state, record.log)
    run = loaded.run
    events = [NewEvent(E.RUN_RESOLVED, {"action": body.model_dump(mode="json")}, actor)]
    try:
        outcome = run.resolve_invalid_tool_call(action)
    except AgentRunError as err:
        error = {"type": type(err).__name__, "message": str(err)}
        return changes.stop(
            record.version, stored.snapshot(loaded), run.turn(), error, events, actor
        )
    snapshot = stored.snapshot(loaded)
    if isinstance(outcome, NeedsResolution):
        ctx = outcome.context
        again = Resolution(ctx.tool_name, ctx.tool_call_id, ctx.args)
        return changes.ask_again(record.version, snapshot, run.turn(), again, events)
    if not isinstance(outcome, Continue | TurnRetried):
        raise TypeError(f"unexpected resolution outcome {outcome!r}")
    return changes.resume(
        record.version, now, events, actor=actor, snapshot=snapshot, turn=run.turn()
    )
