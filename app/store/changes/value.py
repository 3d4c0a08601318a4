"""`Change`, the value a transition is, and the column forms every constructor shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from app.core.events import LEDGER_EVENTS
from app.core.lifecycle import STAYS, TERMINAL, RunStatus, Transition, sources, target
from app.core.serde import SCHEMA_VERSION
from app.core.stored import Snapshot
from app.store.run_records import NewEvent, NewToolCall, SpawnedRun
from app.store.waiting import (
    ModelCall,
    Queued,
    Waiting,
)

T = Transition
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
    closes_calls: bool = False  # its unanswered calls leave their queue (app.toolqueue.sql)
    # A worker may hold the run mid-call: tell it to stop at once (STOP_CHANNEL, the run id)
    # rather than at its next heartbeat (app.worker.stops).
    stops: bool = False
    # Child runs created in the same transaction (an agent tool's calls, app.agents): only
    # if the compare-and-set is applied.
    spawns: tuple[SpawnedRun, ...] = ()

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


def waiting_column(reason: Waiting | None) -> dict[str, Any]:
    """The `waiting_reason` column of a change. A queued run's and a claimed run's reason
    is not stored: the status and the lease columns hold all of it, and every write of the
    run's row carries the column (`app.store.waiting.derived` gives it back on read)."""
    stored = None if reason is None or isinstance(reason, Queued | ModelCall) else reason.doc()
    return {"waiting_reason": stored}


NO_LEASE = {"lease_owner": None, "lease_expires_at": None}
NO_RETRY = {"model_attempts": 0, "model_retry_since": None}


def with_usage(values: dict[str, Any], usage: Mapping[str, Any] | None) -> dict[str, Any]:
    """The run's billed usage, its zero counters and a null `cost_usd` left out (every
    write of the row carries the column; `RunRecord.from_row` fills them in again)."""
    if usage is None:
        return values
    kept = {k: v for k, v in usage.items() if v is not None and (v != 0 or type(v) is not int)}
    return {**values, "usage": kept}
