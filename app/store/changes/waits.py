"""The changes of a waiting run: answered, resumed, decided, and what operators and
conversations do to a run (retry, limits, extend, notes)."""

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
    Answer,
    Change,
    waiting_column,
)
from app.store.run_records import NewEvent
from app.store.waiting import (
    Approval,
    Queued,
    Resolution,
    ToolResults,
)

T = Transition


# --- tool results and resolutions --------------------------------------------------------------


def answer(
    version: int,
    answers: Sequence[Answer],
    waiting: ToolResults | Approval,
    events: Sequence[NewEvent],
) -> Change:
    """Some pending calls answered; the run still waits for the others."""
    return Change(T.ANSWER, waiting_column(waiting), tuple(events), version, answers=tuple(answers))


def resume(
    version: int,
    now: datetime,
    events: Sequence[NewEvent],
    answers: Sequence[Answer] = (),
    *,
    actor: str | None = None,
    round: int | None = None,
    snapshot: Snapshot | None = None,
    turn: int | None = None,
) -> Change:
    """The last pending result arrived (or a resolution lets the run go on): queued, due
    now. A round's answers are written to their rows and the state is left as it is (the
    worker that claims the run applies them: `app.service.recorded`); a resolution, which
    the state machine decides, writes its `snapshot` and `turn`."""
    data = {} if round is None else {"round": round}
    values = {"available_at": now, "callback_token_hash": None} | waiting_column(Queued())
    return Change(
        T.RESUME,
        values if turn is None else {"turn": turn} | values,
        (*events, NewEvent(E.RUN_RESUMED, data, actor)),
        version,
        snapshot,
        answers=tuple(answers),
        notify=True,
    )


def decide(version: int, waiting: ToolResults | Approval, events: Sequence[NewEvent]) -> Change:
    """Decisions on gated calls (their rows: `app.approvals.rows`); the run still waits
    for the results of the calls handed out, or for other decisions."""
    return Change(T.DECIDE, waiting_column(waiting), tuple(events), version)


def ask_again(
    version: int, snapshot: Snapshot, turn: int, reason: Resolution, events: Sequence[NewEvent]
) -> Change:
    """A resolution handled one invalid call and the next awaits its own."""
    return Change(
        T.ASK_AGAIN, {"turn": turn} | waiting_column(reason), tuple(events), version, snapshot
    )


# --- operators --------------------------------------------------------------------------------


def retry(
    version: int, from_status: RunStatus, previous_error: Any, actor: str, now: datetime
) -> Change:
    """A failed or expired run goes back to the queue from its last durable state."""
    return Change(
        T.RETRY,
        {"available_at": now, "error": None}
        | NO_RETRY  # (its model calls' retries start again: attempts and their time)
        | NO_LEASE
        | waiting_column(Queued()),
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
        {"available_at": now, "limits": None if not limits else dict(limits)}
        | waiting_column(Queued()),
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
