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

from app.core.events import EventType as E
from app.core.lifecycle import STAYS, RunStatus, Transition, sources, target
from app.core.serde import SCHEMA_VERSION
from app.core.stored import Snapshot
from app.store.records import NewEvent, NewToolCall
from app.timestamps import iso

T = Transition

#: Changes of the lease holder that leave its fencing token where it is (its next
#: change still expects the version it claimed); every other change moves it on.
KEEPS_TOKEN = frozenset({T.HEARTBEAT, T.RECORD, T.BILL})


# --- waiting reasons: why a run is where it is (the `waiting_reason` column) ------------------


@dataclass(frozen=True, slots=True)
class Queued:
    def doc(self) -> dict[str, Any]:
        return {"type": RunStatus.QUEUED.value}


@dataclass(frozen=True, slots=True)
class ModelCall:
    worker: str
    lease_until: datetime

    def doc(self) -> dict[str, Any]:
        return {"type": "model_call", "worker": self.worker, "lease_until": iso(self.lease_until)}


@dataclass(frozen=True, slots=True)
class ToolResults:
    round: int
    call_ids: tuple[str, ...]

    def doc(self) -> dict[str, Any]:
        return {"type": "tool_results", "round": self.round, "call_ids": list(self.call_ids)}


@dataclass(frozen=True, slots=True)
class Resolution:
    tool_name: str
    tool_call_id: str | None
    arguments: str

    def doc(self) -> dict[str, Any]:
        return {
            "type": "resolution",
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "arguments": self.arguments,
        }


@dataclass(frozen=True, slots=True)
class Backoff:
    """A run waiting to retry a model call: which attempt failed and how, when the next
    starts, and why then (the provider's `Retry-After`, a rate limit's reset, or
    exponential backoff)."""

    until: datetime
    delay_seconds: float
    reason: str
    attempt: int
    max_attempts: int
    error: Mapping[str, Any]
    hint_seconds: float | None = None
    header: str | None = None

    def doc(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "backoff",
            "until": iso(self.until),
            "delay_seconds": round(self.delay_seconds, 3),
            "reason": self.reason,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "status": self.error.get("status"),
            "error": dict(self.error),
        }
        if self.hint_seconds is not None:
            out["provider_hint_seconds"] = round(self.hint_seconds, 3)
            out["header"] = self.header
        return out


Waiting = Queued | ModelCall | ToolResults | Resolution | Backoff


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

    @property
    def status(self) -> RunStatus | None:
        return target(self.transition)

    @property
    def sources(self) -> frozenset[RunStatus]:
        return sources(self.transition)

    @property
    def moves_token(self) -> bool:
        return self.transition not in KEEPS_TOKEN

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
    return {"waiting_reason": None if reason is None else reason.doc()}


_NO_LEASE = {"lease_owner": None, "lease_expires_at": None}
_NO_RETRY = {"model_attempts": 0, "model_retry_since": None}


def _with_usage(values: dict[str, Any], usage: Mapping[str, Any] | None) -> dict[str, Any]:
    return values if usage is None else {**values, "usage": dict(usage)}


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
) -> Change:
    """The model asked for tools: the calls no result answers yet are pending."""
    open_ids = tuple(c.call_id for c in calls if c.preresolved_result is None)
    values = (
        {"turn": turn, "expires_at": expires_at, "callback_token_hash": token_hash}
        | _NO_LEASE
        | _NO_RETRY
        | _waiting(ToolResults(turn, open_ids))
    )
    return Change(
        T.SUSPEND,
        _with_usage(values, usage),
        (*events, NewEvent(E.RUN_REQUIRES_ACTION, dict(requires_action))),
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
) -> Change:
    """An invalid tool call whose policy is `ask`: someone resolves it."""
    values = {"turn": turn, "expires_at": expires_at} | _NO_LEASE | _NO_RETRY | _waiting(reason)
    return Change(
        T.SUSPEND,
        _with_usage(values, usage),
        (*events, NewEvent(E.RUN_REQUIRES_ACTION, reason.doc())),
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
    )


# --- tool results and resolutions --------------------------------------------------------------


def answer(
    version: int, answers: Sequence[Answer], waiting: ToolResults, events: Sequence[NewEvent]
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


def extend(version: int, expires_at: datetime, event: NewEvent) -> Change:
    return Change(T.EXTEND, {"expires_at": expires_at}, (event,), version)


def note(event: NewEvent) -> Change:
    return Change(T.NOTE, {}, (event,))


def annotate(event: NewEvent) -> Change:
    """An event on a finished run, which keeps its status (`run.continued`: a later run
    continues its conversation)."""
    return Change(T.ANNOTATE, {}, (event,))
