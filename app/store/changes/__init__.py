"""A transition is a value: what one compare-and-set of a run writes.

Each constructor returns one `Change` (`value`): its lifecycle transition (the status it
leads to and the statuses it may start from come from `app.core.lifecycle.TABLE`, the
only place a status is decided), the columns it sets, its events, the typed
`waiting_reason`, and the run's snapshot when its state moved (`app.core.stored`: the
control document and the batch appending what the run gained). The worker's claims and
the sweeps build theirs in `claims`, a waiting run's and the operators' are in `waits`;
`RunStore.apply` writes one with a single compare-and-set. Pure: no IO; the caller passes
the clock's reading.
"""

from __future__ import annotations

from app.store.changes.claims import (
    BUDGET_EXCEEDED,
    back_off,
    bill,
    cancel,
    claim,
    complete,
    exhaust,
    expire,
    fail,
    heartbeat,
    lease_lost,
    record,
    release,
    rewrite,
    stop,
    suspend_for_budget,
    suspend_for_resolution,
    suspend_for_tools,
    throttle,
)
from app.store.changes.value import KEEPS_TOKEN, Answer, Change
from app.store.changes.waits import (
    annotate,
    answer,
    ask_again,
    awaited,
    decide,
    extend,
    limit,
    note,
    resume,
    resume_budget,
    retry,
)
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

__all__ = [
    "BUDGET_EXCEEDED",
    "KEEPS_TOKEN",
    "Answer",
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
    "annotate",
    "answer",
    "ask_again",
    "awaited",
    "back_off",
    "bill",
    "cancel",
    "claim",
    "complete",
    "decide",
    "exhaust",
    "expire",
    "extend",
    "fail",
    "heartbeat",
    "lease_lost",
    "limit",
    "note",
    "record",
    "release",
    "resume",
    "resume_budget",
    "retry",
    "rewrite",
    "stop",
    "suspend_for_budget",
    "suspend_for_resolution",
    "suspend_for_tools",
    "throttle",
]
