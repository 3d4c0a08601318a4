"""The changes of a worker's claim (claimed, suspended, finished, retried, released)
and of the sweeps that end a waiting run (expired, exhausted, cancelled)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus, Transition
from app.core.stored import Snapshot
from app.store.changes.value import (
    NO_LEASE,
    NO_RETRY,
    Change,
    waiting_column,
    with_usage,
)
from app.store.run_records import NewEvent, NewToolCall, SpawnedRun
from app.store.waiting import (
    Approval,
    Backoff,
    Budget,
    ModelCall,
    Queued,
    RateLimit,
    Resolution,
    ToolResults,
)

T = Transition


# --- a worker's claim --------------------------------------------------------------------------


def claim(worker: str, lease_until: datetime) -> Change:
    """A worker takes a due queued run (the store also counts the attempt)."""
    return Change(
        T.CLAIM,
        {"lease_owner": worker, "lease_expires_at": lease_until}
        | waiting_column(ModelCall(worker, lease_until)),
        (NewEvent(E.RUN_CLAIMED, {"worker": worker}),),
    )


def heartbeat(version: int, worker: str, lease_until: datetime) -> Change:
    return Change(
        T.HEARTBEAT,
        {"lease_expires_at": lease_until} | waiting_column(ModelCall(worker, lease_until)),
        expect_version=version,
    )


def record(version: int, events: Sequence[NewEvent]) -> Change:
    """Events of the lease holder with no change of state (streamed text)."""
    return Change(T.RECORD, {}, tuple(events), expect_version=version)


def bill(events: Sequence[NewEvent]) -> Change:
    """Model calls a worker made under a lease it lost: on the ledger all the same."""
    return Change(T.BILL, {}, tuple(events))


def suspend_for_tools(
    version: int,
    snapshot: Snapshot,
    turn: int,
    calls: Sequence[NewToolCall],
    token_hash: str,
    expires_at: datetime,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
    requires_action: Mapping[str, Any],
    now: datetime,
    approval_required: Mapping[str, Any] | None = None,
    spawns: Sequence[SpawnedRun] = (),
    children_started: Mapping[str, Any] | None = None,
) -> Change:
    """The model asked for tools: the calls no result answers yet are pending. With
    `approval_required` (the data of its event) some are gated: they wait for a decision
    (an `Approval` reason), the others are handed out (`run.requires_action`, if any).
    With `spawns`, agent tools' calls start child runs in the same transaction (their
    `run.children_started` event); an executor is handed only what it owes."""
    open_ids = tuple(c.call_id for c in calls if c.for_executor)
    reason: ToolResults | Approval = ToolResults(turn, open_ids)
    announced = [NewEvent(E.RUN_REQUIRES_ACTION, dict(requires_action))]
    if children_started is not None:
        announced = [NewEvent(E.RUN_CHILDREN_STARTED, dict(children_started))]
        if open_ids:
            announced.append(NewEvent(E.RUN_REQUIRES_ACTION, dict(requires_action)))
    if approval_required is not None:
        gated = tuple(c.call_id for c in calls if c.approval is not None)
        reason = Approval(turn, open_ids, gated)
        if not open_ids:
            announced = [e for e in announced if e.type != E.RUN_REQUIRES_ACTION]
        announced.append(NewEvent(E.RUN_APPROVAL_REQUIRED, dict(approval_required)))
    values = (
        {
            "turn": turn,
            "expires_at": expires_at,
            "callback_token_hash": token_hash,
            "suspended_at": now,
        }
        | NO_LEASE
        | NO_RETRY
        | waiting_column(reason)
    )
    return Change(
        T.SUSPEND,
        with_usage(values, usage),
        (*events, *announced),
        version,
        snapshot,
        tuple(calls),
        turn,
        spawns=tuple(spawns),
    )


def suspend_for_resolution(
    version: int,
    snapshot: Snapshot,
    turn: int,
    reason: Resolution,
    expires_at: datetime,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
    now: datetime,
) -> Change:
    """An invalid tool call whose policy is `ask`: someone resolves it."""
    values = (
        {"turn": turn, "expires_at": expires_at, "suspended_at": now}
        | NO_LEASE
        | NO_RETRY
        | waiting_column(reason)
    )
    return Change(
        T.SUSPEND,
        with_usage(values, usage),
        (*events, NewEvent(E.RUN_REQUIRES_ACTION, reason.doc())),
        version,
        snapshot,
    )


def suspend_for_budget(
    version: int,
    snapshot: Snapshot,
    turn: int,
    reason: Budget,
    expires_at: datetime,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
    now: datetime,
) -> Change:
    """The run's next model call could pass a limit (app.limits.rules): it waits for
    someone to raise the limit (`POST /v1/runs/{id}/limits`), cancel it, or its expiry."""
    values = (
        {"turn": turn, "expires_at": expires_at, "suspended_at": now}
        | NO_LEASE
        | NO_RETRY
        | waiting_column(reason)
    )
    data = {k: v for k, v in reason.doc().items() if k != "type"}
    return Change(
        T.SUSPEND,
        with_usage(values, usage),
        (*events, NewEvent(E.RUN_BUDGET_EXCEEDED, data)),
        version,
        snapshot,
    )


def complete(
    version: int,
    snapshot: Snapshot,
    turn: int,
    output: str,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
) -> Change:
    values = {"turn": turn, "output": output} | NO_LEASE | NO_RETRY | waiting_column(None)
    return Change(
        T.COMPLETE,
        with_usage(values, usage),
        (*events, NewEvent(E.RUN_COMPLETED, {"output": output})),
        version,
        snapshot,
    )


def fail(
    version: int,
    error: Mapping[str, Any],
    events: Sequence[NewEvent] = (),
    usage: Mapping[str, Any] | None = None,
) -> Change:
    """The worker's run ends failed. Its state stays the last durable one (no
    snapshot), so an operator can retry it."""
    values = {"error": dict(error)} | NO_LEASE | waiting_column(None)
    return Change(
        T.FAIL,
        with_usage(values, usage),
        (*events, NewEvent(E.RUN_FAILED, dict(error))),
        version,
    )


def stop(
    version: int,
    snapshot: Snapshot,
    turn: int,
    error: Mapping[str, Any],
    events: Sequence[NewEvent],
    actor: str | None,
) -> Change:
    """A resolution ends a suspended run (its action failed or stopped it)."""
    values = {"turn": turn, "error": dict(error)} | waiting_column(None)
    return Change(
        T.STOP, values, (*events, NewEvent(E.RUN_FAILED, dict(error), actor)), version, snapshot
    )


def back_off(
    version: int,
    reason: Backoff,
    since: datetime,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
) -> Change:
    """A retryable model-call failure: back in the queue, due at `reason.until`."""
    values = {
        "available_at": reason.until,
        "model_attempts": reason.attempt,
        "model_retry_since": since,
    } | waiting_column(reason)
    return Change(T.BACKOFF, with_usage(values, usage), tuple(events), version)


def throttle(
    version: int,
    reason: RateLimit,
    due: datetime,
    reserved_at: datetime | None,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
) -> Change:
    """A shared limit defers the model call: back in the queue, not claimed before `due`;
    `reserved_at`: when the call it reserved may go (its next call honours it)."""
    values = (
        {"available_at": due, "flow_reserved_at": reserved_at} | NO_LEASE | waiting_column(reason)
    )
    return Change(T.THROTTLE, with_usage(values, usage), tuple(events), version)


def rewrite(
    version: int,
    snapshot: Snapshot,
    turn: int,
    now: datetime,
    events: Sequence[NewEvent],
    usage: Mapping[str, Any] | None,
) -> Change:
    """A hook moved the run on in the worker: a turn-boundary hook replaced its
    conversation (compaction, `snapshot`: its batch resets the log's lists), before the
    turn's model call; or a round answerer answered its tool round (a replay, `snapshot`:
    the round's results appended). Written at once, and the run back in the queue, due
    now: a crash after it finds what the hook did, so it is never done twice (and a long
    chain of answered rounds is as many claims, each under its own lease); the events (the
    hook's) say what it did."""
    values = {"turn": turn, "available_at": now} | NO_LEASE | waiting_column(Queued())
    return Change(
        T.REWRITE, with_usage(values, usage), tuple(events), version, snapshot, notify=True
    )


def release(version: int, worker: str, now: datetime) -> Change:
    """A worker gives back a run an outage interrupted: due again at once."""
    return Change(
        T.RELEASE,
        {"available_at": now} | NO_LEASE | waiting_column(Queued()),
        (NewEvent(E.RUN_RELEASED, {"worker": worker}),),
        version,
        notify=True,
    )


def lease_lost(now: datetime) -> Change:
    """The reaper re-queues a run whose worker stopped heartbeating."""
    return Change(
        T.LEASE_LOST,
        {"available_at": now} | NO_LEASE | waiting_column(Queued()),
        (NewEvent(E.RUN_LEASE_LOST, {}),),
        notify=True,
        stops=True,
    )


def expire() -> Change:
    return Change(
        T.EXPIRE,
        {
            "callback_token_hash": None,
            "error": {"type": RunStatus.EXPIRED.value, "message": "the run waited past expires_at"},
        }
        | waiting_column(None),
        (NewEvent(E.RUN_EXPIRED, {}),),
        closes_calls=True,
    )


BUDGET_EXCEEDED = "budget_exceeded"


def exhaust(reason: Budget | None) -> Change:
    """A budget-suspended run waited past its expiry: it fails (`budget_exceeded`)."""
    detail = {} if reason is None else {k: v for k, v in reason.doc().items() if k != "type"}
    error = {
        "type": BUDGET_EXCEEDED,
        "message": "the run waited past expires_at for a limit to be raised",
        **detail,
    }
    return Change(
        T.EXHAUST,
        {"callback_token_hash": None, "error": error} | waiting_column(None),
        (NewEvent(E.RUN_FAILED, error),),
        closes_calls=True,
    )


def cancel(actor: str | None, with_run: str | None = None) -> Change:
    """A run cancelled (`with_run`: as a descendant of that run, cancelled with it)."""
    message = "the run was cancelled"
    if with_run is not None:
        message = f"the run was cancelled with run {with_run}"
    return Change(
        T.CANCEL,
        {
            "callback_token_hash": None,
            "error": {"type": RunStatus.CANCELLED.value, "message": message},
        }
        | NO_LEASE
        | waiting_column(None),
        (NewEvent(E.RUN_CANCELLED, {} if with_run is None else {"with_run": with_run}, actor),),
        closes_calls=True,
        stops=True,
    )
