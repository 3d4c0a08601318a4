"""The run lifecycle as pure code: statuses, transitions and the winner of every race.

The store applies each transition atomically as a compare-and-set on the run's `version`,
so concurrent requests are ordered by commit; this table decides what each later request
finds. Whoever commits first wins; the loser gets a `TransitionRefused` naming the
status it lost to. Terminal statuses absorb everything.
"""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    REQUIRES_ACTION = "requires_action"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


#: The status a run is created in.
INITIAL = RunStatus.QUEUED

TERMINAL = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.EXPIRED}
)


class Transition(StrEnum):
    CLAIM = "claim"  # a worker takes a due queued run
    SUSPEND = "suspend"  # the model asked for tools (or an invalid call awaits `ask`)
    COMPLETE = "complete"
    FAIL = "fail"
    BACKOFF = "backoff"  # retryable provider error: back to the queue, due later
    RESUME = "resume"  # the last pending tool result arrived, or a resolution
    CANCEL = "cancel"
    EXPIRE = "expire"  # a suspended run waited past expires_at
    LEASE_LOST = "lease_lost"  # the reaper re-queues a run whose worker stopped heartbeating
    RETRY = "retry"  # an operator restarts a failed/expired run from its last durable state
    STOP = "stop"  # a resolution whose action (fail, stop) ends a suspended run
    RELEASE = "release"  # a worker gives back a run an outage interrupted
    HEARTBEAT = "heartbeat"  # the lease holder extends its lease
    RECORD = "record"  # the lease holder appends events (streamed text) without a change
    ANSWER = "answer"  # some, not all, pending tool results arrived
    ASK_AGAIN = "ask_again"  # a resolution led to the next invalid call awaiting `ask`
    EXTEND = "extend"  # an operator extends a suspended run's expiry
    NOTE = "note"  # an event naming who did something to a suspended run
    BILL = "bill"  # model calls of a lost lease go on the ledger, whatever the run's status
    ANNOTATE = "annotate"  # an event on a run (a later run continues it, or waits to)
    LEASE = "lease"  # a queue executor leases pending tool calls (their fencing moves on)
    EXHAUST = "exhaust"  # a budget-suspended run waited past expires_at: it fails
    LIMIT = "limit"  # the run's limits were changed (it keeps its status and fencing token)
    DECIDE = "decide"  # an approval decision made; the run still waits (results, approvals)
    THROTTLE = "throttle"  # a shared limit defers the model call: back to the queue, due later
    # A hook moved the run on in the worker (a turn-boundary hook replaced its conversation,
    # a round answerer answered its tool round): written at once, back to the queue, due now.
    REWRITE = "rewrite"


_S = RunStatus
_T = Transition

#: (from status, transition) -> to status. Anything absent is refused.
TABLE: dict[tuple[RunStatus, Transition], RunStatus] = {
    (_S.QUEUED, _T.CLAIM): _S.RUNNING,
    (_S.QUEUED, _T.CANCEL): _S.CANCELLED,
    (_S.RUNNING, _T.SUSPEND): _S.REQUIRES_ACTION,
    (_S.RUNNING, _T.COMPLETE): _S.COMPLETED,
    (_S.RUNNING, _T.FAIL): _S.FAILED,
    (_S.REQUIRES_ACTION, _T.STOP): _S.FAILED,
    (_S.RUNNING, _T.BACKOFF): _S.QUEUED,
    (_S.RUNNING, _T.THROTTLE): _S.QUEUED,
    (_S.RUNNING, _T.REWRITE): _S.QUEUED,
    (_S.RUNNING, _T.CANCEL): _S.CANCELLED,
    (_S.RUNNING, _T.LEASE_LOST): _S.QUEUED,
    (_S.REQUIRES_ACTION, _T.RESUME): _S.QUEUED,
    (_S.REQUIRES_ACTION, _T.CANCEL): _S.CANCELLED,
    (_S.REQUIRES_ACTION, _T.EXPIRE): _S.EXPIRED,
    (_S.FAILED, _T.RETRY): _S.QUEUED,
    (_S.EXPIRED, _T.RETRY): _S.QUEUED,
    (_S.RUNNING, _T.RELEASE): _S.QUEUED,
    (_S.RUNNING, _T.HEARTBEAT): _S.RUNNING,
    (_S.RUNNING, _T.RECORD): _S.RUNNING,
    (_S.REQUIRES_ACTION, _T.ANSWER): _S.REQUIRES_ACTION,
    (_S.REQUIRES_ACTION, _T.ASK_AGAIN): _S.REQUIRES_ACTION,
    (_S.REQUIRES_ACTION, _T.EXTEND): _S.REQUIRES_ACTION,
    (_S.REQUIRES_ACTION, _T.NOTE): _S.REQUIRES_ACTION,
    (_S.REQUIRES_ACTION, _T.LEASE): _S.REQUIRES_ACTION,
    (_S.REQUIRES_ACTION, _T.EXHAUST): _S.FAILED,
    **{(s, _T.LIMIT): s for s in (_S.QUEUED, _S.RUNNING, _S.REQUIRES_ACTION)},
    (_S.REQUIRES_ACTION, _T.DECIDE): _S.REQUIRES_ACTION,
    **{(s, _T.BILL): s for s in RunStatus},
    # (on any run: a waiting continuation is noted on the active run it waits for)
    **{(s, _T.ANNOTATE): s for s in RunStatus},
}

#: Transitions that keep the run in its status (only columns and events change).
STAYS = frozenset(t for t in Transition if all(a == b for (a, x), b in TABLE.items() if x == t))


class OutboxStatus(StrEnum):
    """A webhook delivery's own lifecycle (`webhook_outbox.status`)."""

    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed"


class ApprovalStatus(StrEnum):
    """A gated tool call's decision (`tool_calls.approval`; app.approvals.service)."""

    PENDING = "pending"  # no executor sees it until decided
    APPROVED = "approved"
    REJECTED = "rejected"
    #: Shown, never stored: a call still pending when its run ended (cancelled, expired,
    #: failed) will never be decided (`GET /v1/runs/{id}/approvals`).
    CLOSED = "closed"


class TickOutcome(StrEnum):
    """What a schedule's tick became (`schedule_ticks.outcome`; app.schedules.firing)."""

    STARTED = "started"  # its run was created with its row
    SKIPPED = "skipped"  # overlap kept it from starting (or a newer tick superseded it)
    BUFFERED = "buffered"  # buffer_one: it starts when the last run ends
    MISSED = "missed"  # catch-up let it go (a row may stand for a range of them)
    FAILED = "failed"  # the create's checks refused the schedule's run at the tick
    #: Answered, never stored: a trigger's or a backfill's tick that has a row already.
    EXISTS = "exists"


NOT_RUN = (TickOutcome.MISSED, TickOutcome.SKIPPED, TickOutcome.FAILED)


class KeyState(StrEnum):
    """An API key's state (`app.tenancy.keys`), derived from its revocation and expiry:
    spelled here with the other statuses, whose words it shares."""

    ACTIVE = "active"
    EXPIRING = "expiring"  # it has an expiry (a rotated key in its grace period)
    EXPIRED = "expired"
    REVOKED = "revoked"


class TransitionRefused(Exception):
    """`transition` is not possible from `current` (someone else's transition won)."""

    def __init__(self, run_id: str, current: RunStatus, transition: Transition) -> None:
        self.run_id = run_id
        self.current = current
        self.transition = transition
        super().__init__(f"run {run_id} is {current.value}; cannot {transition.value} it")


def allowed(current: RunStatus, transition: Transition) -> bool:
    return (current, transition) in TABLE


def apply(run_id: str, current: RunStatus, transition: Transition) -> RunStatus:
    """The status after `transition`, or `TransitionRefused` naming the current status."""
    try:
        return TABLE[(current, transition)]
    except KeyError:
        raise TransitionRefused(run_id, current, transition) from None


def sources(transition: Transition) -> frozenset[RunStatus]:
    """The statuses `transition` may start from (the store's `WHERE status IN ...`)."""
    return _SOURCES[transition]


def target(transition: Transition) -> RunStatus | None:
    """The status `transition` leads to from every source; None for the ones that keep
    whatever status the run has (`BILL`, `ANNOTATE`)."""
    return _TARGETS[transition]


def _target(transition: Transition) -> RunStatus | None:
    ends = {b for (a, t), b in TABLE.items() if t == transition}
    return next(iter(ends)) if len(ends) == 1 else None


_SOURCES = {t: frozenset(s for (s, x) in TABLE if x == t) for t in Transition}
_TARGETS = {t: _target(t) for t in Transition}
