"""A transition is a value: what one compare-and-set of a run writes.

Each constructor below returns one `Change`: its lifecycle transition (the status it
leads to and the statuses it may start from come from `app.core.lifecycle.TABLE`, the
only place a status is decided), the columns it sets, its events, the typed
`waiting_reason`, and the run's snapshot when its state moved (`app.core.stored`: the
control document and the batch appending what the run gained). The service and the
worker build changes; `RunStore.apply` writes one with a single compare-and-set. Pure:
no IO; the caller passes the clock's reading.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.core.events import LEDGER_EVENTS
from app.core.events import EventType as E
from app.core.lifecycle import STAYS, TERMINAL, RunStatus, Transition, sources, target
from app.core.serde import SCHEMA_VERSION
from app.core.stored import Snapshot
from app.store.records import NewEvent, NewToolCall
from app.store.waiting import (
    Approval,
    Backoff,
    Budget,
    ModelCall,
    Queued,
    RateLimit,
    Resolution,
    ToolResults,
    Waiting,
)

T = Transition
__all__ = [
    "Approval",
    "Backoff",
    "Budget",
    "Change",
    "ModelCall",
    "Queued",
    "RateLimit",
    "Resolution",
    "ToolResults",
    "Waiting",
]

#: Changes of the lease holder that leave its fencing token where it is (its next
#: change still expects the version it claimed); every other change moves it on.
KEEPS_TOKEN = frozenset({T.HEARTBEAT, T.RECORD, T.BILL, T.LIMIT, T.ANNOTATE})


# --- the change -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answer:
    """A submitted result written to its pending call (round, position)."""

    round: int
    position: int
    result: Any
    result_hash: str


@dataclass(frozen=True, slots=True)
class Change:
    transition: Transition
    values: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[NewEvent, ...] = ()
    expect_version: int | None = None  # the fencing token, when the writer holds one
    snapshot: Snapshot | None = None
    tool_calls: tuple[NewToolCall, ...] = ()  # a suspension's pending calls, of `round`
    round: int | None = None
    answers: tuple[Answer, ...] = ()
    notify: bool = False  # wake the workers once committed (the run is due now)
    closes_calls: bool = False  # its unanswered calls leave their queue (app.store.queues)
    # A worker may hold the run mid-call: tell it to stop at once (STOP_CHANNEL, the run id)
    # rather than at its next heartbeat (app.worker.stops).
    stops: bool = False

    @property
    def status(self) -> RunStatus | None:
        return target(self.transition)

    @property
    def sources(self) -> frozenset[RunStatus]:
        return sources(self.transition)

    @property
    def moves_token(self) -> bool:
        return self.transition not in KEEPS_TOKEN

    @property
    def ends(self) -> bool:
        """It finishes the run: the same write hands the run to the fold
        (`unfolded_runs`, app.store.fold)."""
        return self.transition not in STAYS and self.status in TERMINAL

    @property
    def reopens(self) -> bool:
        """It takes a finished run back (an operator's retry): the run leaves the rollups
        in the same transaction (app.store.fold.reopen)."""
        return self.transition not in STAYS and bool(self.sources & TERMINAL) and not self.ends

    @property
    def bills(self) -> bool:
        """It keeps any status and writes ledger rows: on a run that has ended, its calls
        wait for the fold too (a row of `unfolded_runs` that does not count the run)."""
        return self.transition in STAYS and any(e.type in LEDGER_EVENTS for e in self.events)

    def columns(self) -> dict[str, Any]:
        """Every column this change sets (not the store's own bookkeeping: version,
        event count, updated_at)."""
        out = dict(self.values)
        status = self.status
        if status is not None and self.transition not in STAYS:
            out["status"] = status.value
        if self.snapshot is not None:
            out["state"] = self.snapshot.control
            out["schema_version"] = SCHEMA_VERSION
        return out


def _waiting(reason: Waiting | None) -> dict[str, Any]:
    """The `waiting_reason` column of a change. A queued run's and a claimed run's reason
    is not stored: the status and the lease columns hold all of it, and every write of the
    run's row carries the column (`app.store.waiting.derived` gives it back on read)."""
    stored = None if reason is None or isinstance(reason, Queued | ModelCall) else reason.doc()
    return {"waiting_reason": stored}


_NO_LEASE = {"lease_owner": None, "lease_expires_at": None}
_NO_RETRY = {"model_attempts": 0, "model_retry_since": None}


def _with_usage(values: dict[str, Any], usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's billed usage, its zero counters and a null `cost_usd` left out (every
    write of the row carries the column; `RunRecord.from_row` fills them in again)."""
    if usage is None:
        return values
    kept = {k: v for k, v in usage.items() if v is not None and (v != 0 or type(v) is not int)}
    return {**values, "usage": kept}


# --- a worker's claim --------------------------------------------------------------------------


def claim(worker: str, lease_until: datetime) -> Change:
    """A worker takes a due queued run (the store also counts the attempt)."""
    return Change(
        T.CLAIM,
        {"lease_owner": worker, "lease_expires_at": lease_until}
        | _waiting(ModelCall(worker, lease_until)),
        (NewEvent(E.RUN_CLAIMED, {"worker": worker}),),
    )


def heartbeat(version: int, worker: str, lease_until: datetime) -> Change:
    return Change(
        T.HEARTBEAT,
        {"lease_expires_at": lease_until} | _waiting(ModelCall(worker, lease_until)),
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
) -> Change:
    """The model asked for tools: the calls no result answers yet are pending. With
    `approval_required` (the data of its event) some are gated: they wait for a decision
    (an `Approval` reason), the others are handed out (`run.requires_action`, if any)."""
    open_ids = tuple(
        c.call_id for c in calls if c.preresolved_result is None and c.approval is None
    )
    reason: ToolResults | Approval = ToolResults(turn, open_ids)
    announced = [NewEvent(E.RUN_REQUIRES_ACTION, dict(requires_action))]
    if approval_required is not None:
        gated = tuple(c.call_id for c in calls if c.approval is not None)
        reason = Approval(turn, open_ids, gated)
        announced = announced if open_ids else []
        announced.append(NewEvent(E.RUN_APPROVAL_REQUIRED, dict(approval_required)))
    values = (
        {
            "turn": turn,
            "expires_at": expires_at,
            "callback_token_hash": token_hash,
            "suspended_at": now,
        }
        | _NO_LEASE
        | _NO_RETRY
        | _waiting(reason)
    )
    return Change(
        T.SUSPEND,
        _with_usage(values, usage),
        (*events, *announced),
        version,
        snapshot,
        tuple(calls),
        turn,
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
        | _NO_LEASE
        | _NO_RETRY
        | _waiting(reason)
    )
    return Change(
        T.SUSPEND,
        _with_usage(values, usage),
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
    """The run's next model call could pass a limit (app.service.budgets): it waits for
    someone to raise the limit (`POST /v1/runs/{id}/limits`), cancel it, or its expiry."""
    values = (
        {"turn": turn, "expires_at": expires_at, "suspended_at": now}
        | _NO_LEASE
        | _NO_RETRY
        | _waiting(reason)
    )
    data = {k: v for k, v in reason.doc().items() if k != "type"}
    return Change(
        T.SUSPEND,
        _with_usage(values, usage),
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
    values = {"turn": turn, "output": output} | _NO_LEASE | _NO_RETRY | _waiting(None)
    return Change(
        T.COMPLETE,
        _with_usage(values, usage),
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
    values = {"error": dict(error)} | _NO_LEASE | _waiting(None)
    return Change(
        T.FAIL,
        _with_usage(values, usage),
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
    values = {"turn": turn, "error": dict(error)} | _waiting(None)
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
    } | _waiting(reason)
    return Change(T.BACKOFF, _with_usage(values, usage), tuple(events), version)


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
    values = {"available_at": due, "flow_reserved_at": reserved_at} | _NO_LEASE | _waiting(reason)
    return Change(T.THROTTLE, _with_usage(values, usage), tuple(events), version)


def release(version: int, worker: str, now: datetime) -> Change:
    """A worker gives back a run an outage interrupted: due again at once."""
    return Change(
        T.RELEASE,
        {"available_at": now} | _NO_LEASE | _waiting(Queued()),
        (NewEvent(E.RUN_RELEASED, {"worker": worker}),),
        version,
        notify=True,
    )


def lease_lost(now: datetime) -> Change:
    """The reaper re-queues a run whose worker stopped heartbeating."""
    return Change(
        T.LEASE_LOST,
        {"available_at": now} | _NO_LEASE | _waiting(Queued()),
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
        | _waiting(None),
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
        {"callback_token_hash": None, "error": error} | _waiting(None),
        (NewEvent(E.RUN_FAILED, error),),
        closes_calls=True,
    )


def cancel(actor: str | None) -> Change:
    return Change(
        T.CANCEL,
        {
            "callback_token_hash": None,
            "error": {"type": RunStatus.CANCELLED.value, "message": "the run was cancelled"},
        }
        | _NO_LEASE
        | _waiting(None),
        (NewEvent(E.RUN_CANCELLED, {}, actor),),
        closes_calls=True,
        stops=True,
    )


# --- tool results and resolutions --------------------------------------------------------------


def answer(
    version: int,
    answers: Sequence[Answer],
    waiting: ToolResults | Approval,
    events: Sequence[NewEvent],
) -> Change:
    """Some pending calls answered; the run still waits for the others."""
    return Change(T.ANSWER, _waiting(waiting), tuple(events), version, answers=tuple(answers))


def resume(
    version: int,
    snapshot: Snapshot,
    turn: int,
    now: datetime,
    events: Sequence[NewEvent],
    answers: Sequence[Answer] = (),
    *,
    actor: str | None = None,
    round: int | None = None,
) -> Change:
    """The last pending result arrived (or a resolution lets the run go on): queued,
    due now, its results in its state."""
    data = {} if round is None else {"round": round}
    return Change(
        T.RESUME,
        {"turn": turn, "available_at": now, "callback_token_hash": None} | _waiting(Queued()),
        (*events, NewEvent(E.RUN_RESUMED, data, actor)),
        version,
        snapshot,
        answers=tuple(answers),
        notify=True,
    )


def decide(version: int, waiting: ToolResults | Approval, events: Sequence[NewEvent]) -> Change:
    """Decisions on gated calls (their rows: `app.store.approvals`); the run still waits
    for the results of the calls handed out, or for other decisions."""
    return Change(T.DECIDE, _waiting(waiting), tuple(events), version)


def ask_again(
    version: int, snapshot: Snapshot, turn: int, reason: Resolution, events: Sequence[NewEvent]
) -> Change:
    """A resolution handled one invalid call and the next awaits its own."""
    return Change(T.ASK_AGAIN, {"turn": turn} | _waiting(reason), tuple(events), version, snapshot)


# --- operators --------------------------------------------------------------------------------


def retry(
    version: int, from_status: RunStatus, previous_error: Any, actor: str, now: datetime
) -> Change:
    """A failed or expired run goes back to the queue from its last durable state."""
    return Change(
        T.RETRY,
        {"available_at": now, "error": None, "model_attempts": 0} | _NO_LEASE | _waiting(Queued()),
        (
            NewEvent(
                E.RUN_RETRIED,
                {"from_status": from_status.value, "previous_error": previous_error},
                actor,
            ),
        ),
        version,
        notify=True,
    )


def limit(version: int, limits: Mapping[str, Any] | None, event: NewEvent) -> Change:
    """New limits for a run that is not waiting on them (queued, running, suspended for
    tools), as read at `version`: its next claim reads them. The version stays (the lease
    holder's fencing token)."""
    limits = None if not limits else dict(limits)
    return Change(T.LIMIT, {"limits": limits}, (event,), version)


def resume_budget(
    version: int, limits: Mapping[str, Any] | None, now: datetime, event: NewEvent
) -> Change:
    """New limits for a budget-suspended run: queued again, due now (the worker checks
    the call against them again)."""
    return Change(
        T.RESUME,
        {"available_at": now, "limits": None if not limits else dict(limits)} | _waiting(Queued()),
        (event, NewEvent(E.RUN_RESUMED, {}, event.actor)),
        version,
        notify=True,
    )


def extend(version: int, expires_at: datetime, event: NewEvent) -> Change:
    return Change(T.EXTEND, {"expires_at": expires_at}, (event,), version)


def note(event: NewEvent) -> Change:
    return Change(T.NOTE, {}, (event,))


def awaited(event: NewEvent, run_id: str) -> Change:
    """`annotate`, on the active run that run `run_id` waits for (`if_busy: enqueue`): the
    write that ends it returns `awaited_by` (keeping its status and fencing token)."""
    return Change(T.ANNOTATE, {"awaited_by": run_id}, (event,))


def annotate(event: NewEvent) -> Change:
    """An event on a run, which keeps its status and fencing token (`run.continued`: a
    later run continues its conversation, or waits to: `if_busy` `enqueue`)."""
    return Change(T.ANNOTATE, {}, (event,))
