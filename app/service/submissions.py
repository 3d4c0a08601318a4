"""Who wins a tool-result submission, and what it writes: pure rules over the run as read.

A submission reads the suspended run and its pending calls, decides here, and writes one
compare-and-set change on the version it read (`app.service.tool_results`); a
concurrent submission moves the version, so the loser reads again and decides again. A
refused request (unknown id, a different result for an answered call, a run no longer
waiting) raises before anything is written.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.events import EventType as E
from app.store import changes
from app.store.changes import Answer, Approval, Change, ToolResults
from app.store.run_records import NewEvent, RunRecord, ToolCallRecord

#: Re-reads allowed when concurrent submissions to one run keep moving its version.
SUBMIT_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class SubmittedResult:
    call_id: str
    result: dict[str, Any]  # {"output": ..., "is_error": bool}
    result_hash: str
    actor: str | None = None  # who submitted it: recorded on its tool_result.received
    position: int | None = None  # the call it answers (a leased call), not the first open
    child: str | None = None  # the child run whose outcome it is (an agent tool's call)


@dataclass(frozen=True, slots=True)
class SubmitOutcome:
    record: RunRecord
    accepted: list[str]  # call ids newly answered by this request
    resumed: bool


class StatusConflict(Exception):
    """The run is not waiting for tool results; `record` is what it is now."""

    def __init__(self, record: RunRecord) -> None:
        super().__init__(record.status.value)
        self.record = record


class UnknownCallError(Exception):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


class AnsweredByChild(UnknownCallError):
    """The call is an agent tool's: only its child run's outcome answers it."""

    def __init__(self, call_id: str, child: str) -> None:
        super().__init__(call_id)
        self.child = child


class ResultConflictError(Exception):
    def __init__(self, call_id: str) -> None:
        super().__init__(call_id)
        self.call_id = call_id


def decide(
    record: RunRecord,
    calls: list[ToolCallRecord],
    results: Sequence[SubmittedResult],
    now: datetime,
) -> Change | None:
    """The change a submission makes to the run as read, None when it changes nothing
    (every result was already there, identical), or a refusal (raised).

    Results go to the first unanswered call with their id (ids may repeat within a
    round); one identical to a stored answer is a retry, not a conflict. When the last
    open call is answered the run resumes without its state being read: the worker that
    claims it applies the recorded answers (`app.service.recorded`)."""
    round = record.waiting_round
    if round is None:
        raise StatusConflict(record)
    answered: dict[int, SubmittedResult] = {}
    for submitted in results:
        candidates = [
            c
            for c in calls
            if c.call_id == submitted.call_id
            and submitted.position in (None, c.position)
            and not c.awaits_approval  # (no result before a decision: not pending yet)
            and c.child_run_id == submitted.child  # (an agent tool's: its child's only)
        ]
        if not candidates:
            child = next(
                (
                    c.child_run_id
                    for c in calls
                    if c.call_id == submitted.call_id and c.child_run_id
                ),
                None,
            )
            if child is not None:
                raise AnsweredByChild(submitted.call_id, child)
            raise UnknownCallError(submitted.call_id)
        open_ = [c for c in candidates if c.result_hash is None and c.position not in answered]
        if open_:
            answered[open_[0].position] = submitted
            continue
        earlier = [c.result_hash for c in candidates] + [
            answered[c.position].result_hash for c in candidates if c.position in answered
        ]
        if submitted.result_hash not in earlier:
            raise ResultConflictError(submitted.call_id)
    if not answered:
        return None
    events = [
        NewEvent(E.TOOL_RESULT_RECEIVED, {"tool_call_id": s.call_id}, s.actor)
        for s in answered.values()
    ]
    answers = [Answer(round, pos, s.result, s.result_hash) for pos, s in answered.items()]
    remaining = open_call_ids(calls, answered)
    awaiting = tuple(c.call_id for c in calls if c.awaits_approval)
    if remaining or awaiting:
        return changes.answer(
            record.version, answers, still_waiting(round, remaining, awaiting), events
        )
    actor = next(iter(answered.values())).actor
    return changes.resume(record.version, now, events, answers, actor=actor, round=round)


def open_call_ids(
    calls: list[ToolCallRecord], answered: Container[int], released: Container[int] = ()
) -> list[str]:
    """The round's calls an executor still owes a result: unanswered (nor by this
    request's `answered` positions), not the run's own, not awaiting a decision (unless
    `released`: approved by this request)."""
    return [
        c.call_id
        for c in calls
        if c.result_hash is None
        and not c.preresolved
        and c.position not in answered
        and (not c.awaits_approval or c.position in released)
    ]


def still_waiting(
    round: int, open_ids: Sequence[str], awaiting: Sequence[str]
) -> ToolResults | Approval:
    """Why a suspended run still waits: for decisions on `awaiting` (and the results of
    `open_ids`), else for those results."""
    if awaiting:
        return Approval(round, tuple(open_ids), tuple(awaiting))
    return ToolResults(round, tuple(open_ids))


def accepted(change: Change) -> list[str]:
    """The call ids a submission's change answers."""
    return [str(e.data["tool_call_id"]) for e in change.events if "tool_call_id" in e.data]
