"""What differs between PostgreSQL and SQLite, as one protocol (`Backend`); one
implementation per dialect (`app.store.backend.postgres`, `app.store.backend.sqlite`).

The repositories (`app.store.transitions`, `lookups`, `queues`, `outbox`, `watchers`) hold
the SQL both dialects share (what the backends use too, below both: `app.store.sql`) and
call a backend for the rest: how a statement runs (on PostgreSQL the hot ones on asyncpg
directly, `app.store.backend.pg_direct`), transactions, wake-ups after the commit (NOTIFY;
SQLite's listeners poll), the dialect's statement forms (insert-on-conflict, `FOR UPDATE
SKIP LOCKED`), and the writes whose form differs: a change
with its side rows is one statement of data-modifying CTEs on PostgreSQL and an UPDATE
with follow-up inserts in one transaction on SQLite. Rows come back as mappings (by column
name) and leave the backend as typed records (`app.store.run_records`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.core.scope import Scope
from app.core.stored import Snapshot
from app.store.changes import Change
from app.store.run_records import NewEvent, RunRecord, ToolCallRecord

#: A row: its columns by name (an asyncpg record, a SQLAlchemy row mapping, a dict).
Row = Mapping[Any, Any]
#: (channel, payload) of a wake-up to send once a write is committed.
Wake = tuple[str, str]

#: NOTIFY channels: workers (a run is due), live streams (a watched run's events),
#: webhook senders (a delivery is due), queue executors (payload: the queue's name), the
#: worker holding a run (payload: its id; the run left its hands: cancelled, reaped).
NOTIFY_CHANNEL = "agentrun_runs"
EVENTS_CHANNEL = "agentrun_events"
WEBHOOKS_CHANNEL = "agentrun_webhooks"
QUEUE_CHANNEL = "agentrun_tool_calls"
STOP_CHANNEL = "agentrun_stop"
#: The `run_configs` columns that find a run by another (`NewRun.lineage`), written once.
LINEAGE = ("parent_run_id", "root_run_id", "forked_from_run_id")


@dataclass(frozen=True, slots=True)
class ChangeWrite:
    """One compare-and-set of a run (`app.store.transitions.Transitions.apply`)."""

    run_id: str
    change: Change
    now: datetime
    known: RunRecord | None = None  # the run as the caller read it (config and metadata)
    claim_for: tuple[str, datetime] | None = None  # (worker, lease until): claim next
    conn: AsyncConnection | None = None  # a sweep's transaction (else its own)
    scope: Scope = field(kw_only=True)  # the caller's: a run out of it is refused


@dataclass(slots=True)
class Changed:
    record: RunRecord | None  # the run as changed; None when refused
    claimed: RunRecord | None = None  # the run claimed with `claim_for`
    wakes: list[Wake] = field(default_factory=list)  # to send once committed


@dataclass(frozen=True, slots=True)
class NewRun:
    """A run to insert (`Transitions.create`)."""

    values: Mapping[str, Any]  # the `runs` columns
    config: dict[str, Any]
    metadata: dict[str, Any]
    events: Sequence[NewEvent]
    snapshot: Snapshot
    now: datetime
    conn: AsyncConnection | None = None  # a transaction it joins (a suspension's children)

    @property
    def lineage(self) -> dict[str, str | None]:
        """The `LINEAGE` columns: a child run's parent and root (its configuration's
        `tree`), a fork's original (`forked_from`); None where the run has none."""
        tree = self.config.get("tree") or {}
        fork = self.config.get("forked_from") or {}
        values = (tree.get("parent_run_id"), tree.get("root_run_id"), fork.get("run_id"))
        return dict(zip(LINEAGE, values, strict=True))


@dataclass(frozen=True, slots=True)
class Lease:
    """A lease of a queue's calls (`app.toolqueue.sql.ToolCallQueue.lease_calls`)."""

    queue: str
    owner: str
    now: datetime
    until: datetime
    limit: int
    tenant: str  # whose queue
    # At most this many of the queue's calls under a live lease once leased (None: no
    # limit); the backend serializes the leases of a limited queue.
    max_in_flight: int | None = None


class Forms(Protocol):
    """A dialect's forms of statements and session settings, for the repositories that
    run their own SQLAlchemy statements on a connection (the fold, retention, reports,
    gauges): `app.store.backend.dialect_forms.forms_for` gives an engine's or connection's."""

    def insert(self, table: sa.Table) -> Any:
        """An INSERT of `table` that takes `on_conflict_do_nothing/update`."""
        ...

    def for_update(self, stmt: Any) -> Any:
        """`stmt` row-locking what it reads until the transaction ends (SQLite serializes
        writers: unchanged)."""
        ...

    def skip_locked(self, stmt: Any, *of: sa.Table) -> Any:
        """`stmt` row-locking what it picks, skipping rows locked by others (SQLite
        serializes writers: unchanged)."""
        ...

    async def by_index(self, conn: AsyncConnection) -> None:
        """For the rest of `conn`'s transaction, read by index (the statements across
        runs read a few index entries; a planner that misjudges a partial index's
        predicate must not scan a table whole instead)."""
        ...

    async def snapshot(self, conn: AsyncConnection) -> None:
        """Before `conn`'s first statement: its transaction reads one snapshot, so several
        statements agree (PostgreSQL: REPEATABLE READ; SQLite's read already holds the
        database: unchanged)."""
        ...

    async def in_order(self, conn: AsyncConnection) -> None:
        """For the rest of `conn`'s transaction, read an index in its order rather than as
        a bitmap: a bounded walk (a window of a status's runs) must stop where its page is
        found, not read and sort all of what remains once little does."""
        ...

    async def bytewise_ids(self, conn: AsyncConnection) -> bool:
        """Whether `runs.id` compares byte by byte (C's collation, SQLite's BINARY), so
        the ids that start with a prefix are one range of its primary key. Under a
        language's collation (the default of many servers and of Docker's image) they are
        not: an id prefix is then checked along a walk (`app.store.run_pages`)."""
        ...

    def seconds_since(self, at: Any, column: Any) -> sa.ColumnElement[Any]:
        """Seconds from the timestamp `column` to the timestamp expression `at`."""
        ...

    def hour_utc(self, column: Any) -> sa.ColumnElement[Any]:
        """The UTC hour the timestamp `column` is in (a timestamp, or its text on SQLite)."""
        ...

    def latency_bucket(self, column: Any) -> sa.ColumnElement[Any] | None:
        """`app.store.latency.bucket_of` of the milliseconds `column`, computed by the
        database; None where it may lack the logarithm (the caller buckets the values)."""

    def json_text(self, column: Any, *path: str | int) -> sa.ColumnElement[Any]:
        """The value at `path` (keys and array positions) of the JSON document that the
        text `column` holds, as text (a string's own, an object's JSON; null where there
        is none), taken out on the server: the document itself is not sent."""
        ...


class Backend(Forms, Protocol):
    engine: AsyncEngine  # (reports, usage and retention run their own SQLAlchemy queries)
    #: Whether it keeps the fold's rollups (app.store.fold): an operator's retry then
    #: takes the run out of them in the retry's transaction.
    folds: bool
    #: Whether writes wake listeners (LISTEN/NOTIFY); without it they poll.
    notifies: bool

    # --- running statements ----------------------------------------------------------

    def reader(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for reads (no BEGIN/ROLLBACK round trips where the dialect
        allows)."""
        ...

    def transaction(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection in a transaction, committed at the end."""
        ...

    def atomic(self) -> AbstractAsyncContextManager[AsyncConnection]:
        """A connection for an operation that is one (atomic) statement."""
        ...

    async def fetch(self, stmt: Any, params: Mapping[str, Any]) -> list[Row]:
        """The rows of one statement run as its own transaction: the hot path."""
        ...

    async def fetch_one(self, stmt: Any, params: Mapping[str, Any]) -> Row | None: ...

    def wake(self, wakes: Iterable[Wake]) -> None:
        """Send these wake-ups soon (the write is committed)."""
        ...

    async def flush(self) -> None:
        """Return once the wake-ups asked for so far are sent (or have failed)."""
        ...

    async def aclose(self) -> None: ...

    # --- statement forms: `Forms` (insert, for_update, skip_locked, by_index, ...) ----

    # --- writes and reads whose form differs ----------------------------------------

    async def change(self, write: ChangeWrite) -> Changed:
        """One compare-and-set of a run with its events and side rows (and, with
        `claim_for`, the claim of the next due run); `record` None when refused."""
        ...

    async def create(self, run: NewRun) -> Changed:
        """Insert a run with its events and log batch; `record` None when its
        idempotency key is taken."""
        ...

    async def claim(self, change: Change, now: datetime, limit: int) -> list[RunRecord]:
        """Claim up to `limit` due queued runs with `change`, each with its log."""
        ...

    async def run(self, key: str, value: str, *, with_log: bool, scope: Scope) -> RunRecord | None:
        """The run whose `key` column is `value` (with its log when `with_log`), if it
        is in `scope` (one more predicate, not another read)."""
        ...

    async def pending(
        self, key: str, value: str, *, scope: Scope
    ) -> tuple[RunRecord, list[ToolCallRecord]] | None:
        """A run (by `key`; in `scope` only) and the calls of the round it
        waits on, in one read."""
        ...

    async def calls_of_rounds(self, rounds: Mapping[str, int]) -> list[ToolCallRecord]:
        """The tool calls of each run's given round (ordered by run, position)."""
        ...

    async def lease_calls(self, lease: Lease) -> list[ToolCallRecord]:
        """Lease a queue's due calls, with their runs' events (`app.store.backend.leases`)."""
        ...

    async def watch(self, watcher: str, run_ids: Sequence[str], ttl_seconds: float) -> None:
        """Record watches (their runs' event appends NOTIFY); nothing without NOTIFY."""
        ...
