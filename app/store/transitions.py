"""A run's transitions: each public method is one compare-and-set of a run (`WHERE status
IN (...)`, and `AND version = :v` for the lease holder's writes, the fencing token) with
its events, side rows and log batch in the same transaction. What a change writes is
decided by `app.store.changes`; how it is written (one statement of data-modifying CTEs on
PostgreSQL, an UPDATE and follow-up inserts on SQLite) by the backend. The UPDATE itself,
shared by both, is built in `app.store.sql.runs`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app import metrics
from app.core.lifecycle import INITIAL, TERMINAL, Transition
from app.core.scope import Scope
from app.core.stored import Snapshot
from app.store import changes, waiting
from app.store.backend.base import Backend, Changed, ChangeWrite, NewRun, Wake
from app.store.changes import Change
from app.store.config import spawns
from app.store.errors import NotFoundError
from app.store.fold import reopen
from app.store.hooks import Hooks
from app.store.run_records import NewEvent, RunRecord, SpawnedRun
from app.store.schema import DEFAULT_TENANT, runs
from app.store.trees import open_descendant_ids


def _new_run(
    values: dict[str, Any], events: Sequence[NewEvent], snapshot: Snapshot, now: datetime
) -> NewRun:
    """The insert of a run from a create's values (its columns, config and metadata)."""
    columns = {
        **{k: v for k, v in values.items() if k not in ("config", "metadata")},
        "priority": values.get("priority", 0),
        "fair_key": values.get("fair_key", values.get("tenant_id", DEFAULT_TENANT)),
        "state": snapshot.control,
        "last_event_seq": len(events),
        "created_at": now,
        "updated_at": now,
    }
    return NewRun(columns, values["config"], values["metadata"], events, snapshot, now)


def _exhaust(reason: Any) -> Change | None:
    """A budget-suspended run's end past its expiry (`exhaust`); None for the others."""
    if isinstance(reason, dict) and reason.get("type") == "budget":
        parsed = waiting.parse(reason)
        return changes.exhaust(parsed if isinstance(parsed, waiting.Budget) else None)
    return None


# --- the repository ------------------------------------------------------------------------


class _Refused(Exception):
    """(Rolls back a transaction whose compare-and-set was refused.)"""


class Transitions:
    """Creates runs and applies changes to them (workers, the service, the sweeps)."""

    def __init__(self, backend: Backend, hooks: Hooks | None = None) -> None:
        self.backend = backend
        self.hooks = hooks or Hooks()

    async def apply(
        self,
        run_id: str,
        change: Change,
        now: datetime,
        *,
        claim_for: tuple[str, datetime] | None = None,
        known: RunRecord | None = None,
        scope: Scope,
    ) -> tuple[RunRecord | None, RunRecord | None]:
        """Apply `change` to run `run_id` with one compare-and-set: (the run as changed,
        or None when refused: its status or fencing token moved on; the run claimed).

        `known`: the run as the caller read it. Its configuration and metadata never
        change, so the write need not read them back (nor, for a run with no webhook in
        a deployment with no global one, consider an outbox at all).

        With `claim_for` (worker, lease until) the same write also claims the next due run
        for that worker (one round trip on PostgreSQL): a lease holder's last write and
        its next claim. The claim happens even when the change is refused (a lost lease);
        the caller owns what it returns.

        `scope`: on behalf of a tenant, a run of another is refused as a missing one (one
        more predicate of the same compare-and-set); the worker and the sweeps pass ALL."""
        write = ChangeWrite(run_id, change, now, known=known, claim_for=claim_for, scope=scope)
        if change.reopens and self.backend.folds:
            done = await self._reopen(write)
        elif change.spawns:
            done = await self._spawn(dataclasses.replace(write, claim_for=None))
        else:
            done = await self.backend.change(write)
        self.backend.wake(done.wakes)
        if done.claimed is not None:
            metrics.claimed([done.claimed.available_at], now)
        if done.record is not None:
            metrics.transition(change.transition.value, done.record.status.value)
            if self.hooks.run_ended and done.record.status in TERMINAL:
                await self.hooks.ended([done.record], now)
        return done.record, done.claimed

    async def _reopen(self, write: ChangeWrite) -> Changed:
        """A change that takes a finished run back (an operator's retry), in one
        transaction with the run's leaving the rollups (`app.store.fold.reopen`); a
        refused compare-and-set rolls that back."""
        try:
            async with self.backend.transaction() as conn:
                await reopen(conn, write.run_id)
                done = await self.backend.change(dataclasses.replace(write, conn=conn))
                if done.record is None:
                    raise _Refused
        except _Refused:
            return Changed(None)
        return done

    async def _spawn(self, write: ChangeWrite) -> Changed:
        """A change that creates child runs (`Change.spawns`: an agent tool's calls), in
        one transaction: the children exist only if the compare-and-set is applied, and a
        cancel of the run (which locks its row first) either refuses the change or
        finds them (`cancel_tree`)."""
        try:
            async with self.backend.transaction() as conn:
                done = await self.backend.change(dataclasses.replace(write, conn=conn))
                if done.record is None:
                    raise _Refused
                for child in write.change.spawns:
                    run = _new_run(dict(child.values), child.events, child.snapshot, write.now)
                    made = await self.backend.create(dataclasses.replace(run, conn=conn))
                    done.wakes.extend(made.wakes)
        except _Refused:
            return Changed(None)
        for _ in write.change.spawns:
            metrics.transition("create", INITIAL.value)
        return done

    async def cancel_tree(
        self, run_id: str, actor: str | None, now: datetime, *, scope: Scope
    ) -> RunRecord | None:
        """Cancel a run and every descendant that has not ended, in one transaction (None:
        refused, the run had ended or is not in `scope`). A child created concurrently is
        taken too: its creating suspension locked its parent's row, so it either committed
        before this cancel's update of that parent (and the next look finds it) or is
        refused by it."""
        wakes: list[Wake] = []
        ended: list[RunRecord] = []
        try:
            async with self.backend.transaction() as conn:
                write = ChangeWrite(run_id, changes.cancel(actor), now, conn=conn, scope=scope)
                done = await self.backend.change(write)
                if done.record is None:
                    raise _Refused
                wakes.extend(done.wakes)
                ended.append(done.record)
                if spawns(done.record.config):
                    await self._cancel_descendants(conn, run_id, actor, now, wakes, ended)
        except _Refused:
            return None
        self.backend.wake(wakes)
        for record in ended:
            metrics.transition(Transition.CANCEL.value, record.status.value)
        await self.hooks.ended(ended, now)
        return ended[0]

    async def _cancel_descendants(
        self,
        conn: Any,
        run_id: str,
        actor: str | None,
        now: datetime,
        wakes: list[Wake],
        ended: list[RunRecord],
    ) -> None:
        """Cancel the open descendants of `run_id` on `conn`, looking again after each pass
        until none is left (a grandchild committed meanwhile by a child this pass cancelled)."""
        tried: set[str] = set()
        while True:
            ids = [i for i in await open_descendant_ids(conn, run_id) if i not in tried]
            if not ids:
                return
            for child in ids:
                tried.add(child)
                change = changes.cancel(actor, with_run=run_id)
                done = await self.backend.change(
                    ChangeWrite(child, change, now, conn=conn, scope=Scope.ALL)
                )
                if done.record is not None:
                    wakes.extend(done.wakes)
                    ended.append(done.record)

    async def create(
        self, values: dict[str, Any], events: Sequence[NewEvent], snapshot: Snapshot, now: datetime
    ) -> tuple[RunRecord, bool]:
        """Insert a run with its log's first batch; with an idempotency key already taken,
        return the stored run."""
        run = _new_run(values, events, snapshot, now)
        columns = run.values
        done = await self.backend.create(run)
        if done.record is not None:
            self.backend.wake(done.wakes)
            metrics.transition("create", done.record.status.value)
            return done.record, True
        # The idempotency key is taken: the stored run answers.
        existing = await self.backend.run(
            "idempotency_key",
            columns["idempotency_key"],
            with_log=False,
            scope=Scope.of(columns.get("tenant_id", DEFAULT_TENANT)),
        )
        if existing is None:  # deleted between the two statements: ask again
            raise NotFoundError("idempotency key")
        return existing, False

    async def create_joined(self, conn: Any, run: SpawnedRun, now: datetime) -> list[Wake]:
        """Insert a run (as `RunService.prepare` built it) in a feature's transaction on
        `conn` (a schedule's tick: the run exists only if the tick's row commits); the
        wake-ups to send once it has (`created`)."""
        new = _new_run(dict(run.values), run.events, run.snapshot, now)
        made = await self.backend.create(dataclasses.replace(new, conn=conn))
        return list(made.wakes)

    def created(self, count: int, wakes: Sequence[Wake]) -> None:
        """`count` runs of `create_joined` committed: send their wake-ups."""
        self.backend.wake(wakes)
        for _ in range(count):
            metrics.transition("create", INITIAL.value)

    async def claim(self, worker_id: str, now: datetime, lease_until: datetime) -> RunRecord | None:
        """Take the oldest due queued run."""
        claimed = await self.claim_many(worker_id, now, lease_until, 1)
        return claimed[0] if claimed else None

    async def claim_many(
        self, worker_id: str, now: datetime, lease_until: datetime, limit: int
    ) -> list[RunRecord]:
        """Take up to `limit` of the oldest due queued runs with one statement, however
        many idle slots it feeds, each with its log (to load it whole)."""
        claimed = await self.backend.claim(changes.claim(worker_id, lease_until), now, limit)
        metrics.claimed([r.available_at for r in claimed], now)
        return claimed

    async def heartbeat(
        self, run_id: str, version: int, worker_id: str, lease_until: datetime, now: datetime
    ) -> bool:
        """Extend the lease; False when it was lost (the fencing token moved on)."""
        change = changes.heartbeat(version, worker_id, lease_until)
        done, _ = await self.apply(run_id, change, now, scope=Scope.ALL)
        return done is not None

    async def append_events(
        self, run_id: str, version: int | None, events: Sequence[NewEvent], now: datetime
    ) -> bool:
        """Events of the lease holder without a state change (streamed text deltas): fenced
        on `version` and status running, they leave the fencing token where the holder's
        final change expects it; False when the fence refused. `version` None (a worker
        that lost its lease recording the model calls it made, so the ledger counts
        them) appends whatever the run's status. No events: nothing written, True."""
        if not events:
            return True
        change = changes.bill(events) if version is None else changes.record(version, events)
        done, _ = await self.apply(run_id, change, now, scope=Scope.ALL)
        return done is not None

    # --- sweeps ---------------------------------------------------------------------------

    async def reap_expired_leases(self, now: datetime) -> list[str]:
        """Re-queue running runs whose worker stopped heartbeating (the lease is lost)."""
        return await self._sweep(changes.lease_lost(now), runs.c.lease_expires_at < now, now)

    async def expire_suspended(self, now: datetime) -> list[str]:
        """Suspended runs past their expiry end: `expired`, or `failed` for a run that
        waited on a budget (`exhaust`: error `budget_exceeded`)."""
        return await self._sweep(changes.expire(), runs.c.expires_at < now, now, _exhaust)

    async def _sweep(
        self,
        change: Change,
        due: sa.ColumnElement[bool],
        now: datetime,
        instead: Callable[[Any], Change | None] | None = None,
    ) -> list[str]:
        """Apply `change` to every run in its source status matching `due` (row-locked,
        skipping runs others hold), in one transaction; `instead(waiting_reason)` may
        name another change for a run."""
        wakes: list[Wake] = []
        changed: list[tuple[str, str]] = []
        ended: list[RunRecord] = []
        (status,) = change.sources
        async with self.backend.transaction() as conn:
            # The status as a literal: it matches the partial index's predicate (a
            # parameter could not, in a generic plan).
            in_status = runs.c.status == sa.literal_column(f"'{status.value}'")
            columns = [runs.c.id] if instead is None else [runs.c.id, runs.c.waiting_reason]
            pick = self.backend.skip_locked(sa.select(*columns).where(in_status, due).limit(100))
            rows = list((await conn.execute(pick)).all())
            for row in rows:
                other = None if instead is None else instead(row[1])
                applied = other or change
                done = await self.backend.change(
                    ChangeWrite(row[0], applied, now, conn=conn, scope=Scope.ALL)
                )
                wakes.extend(done.wakes)
                if done.record is not None:
                    changed.append((applied.transition.value, done.record.status.value))
                    if done.record.status in TERMINAL:
                        ended.append(done.record)
                        if spawns(done.record.config):  # (its tree ends with it)
                            await self._cancel_descendants(conn, row[0], None, now, wakes, ended)
        self.backend.wake(wakes)
        for transition, status_to in changed:  # (counted once committed)
            metrics.transition(transition, status_to)
        await self.hooks.ended(ended, now)
        return [row[0] for row in rows]
