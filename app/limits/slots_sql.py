"""Concurrency slots of the shared limits: at most `max_concurrent` model calls in flight
on a limit key, across every worker.

A call takes a slot (a `flow_slots` row: key, holder, expiry) on each of its keys that
has a `max_concurrent`, in one transaction: an upsert locks the keys' `flow_limits` rows
(in key order; it stores each key's `max_concurrent` there), then one INSERT … SELECT
takes a slot on every key unless one is full. Concurrent takers queue on the lock, and the
insert, started once the lock is held, sees every slot committed before it (PostgreSQL's
READ COMMITTED takes a snapshot per statement; SQLite has one writer), so none counts the
same free slot. The rate reservation (`app.limits.rates_sql`) follows in the same transaction,
so a refused call reserves nothing. A slot expires by itself (the call's timeout or a
lease: a SIGKILLed worker's slot frees then) and is otherwise deleted when the call ends
(`release`, which also deletes its keys' expired slots). A full key records the refused
run in `flow_waiters` (and forgets the waiters whose run ended); the release of a slot
makes the oldest waiting run that is still queued due at once (and wakes the workers),
under the same lock, so no wake-up is lost between a refusal and a release.
Times are Unix seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import RunStatus
from app.limits.rates_sql import Demand, FlowLimits, Grant
from app.store.backend.base import NOTIFY_CHANNEL, Backend
from app.store.schema import flow_limits, flow_slots, flow_waiters, runs

f, s, w = flow_limits, flow_slots, flow_waiters


@dataclass(frozen=True, slots=True)
class Slot:
    """A key's `max_concurrent`: how many calls it lets be in flight at once."""

    key: str
    max_concurrent: int


@dataclass(frozen=True, slots=True)
class Taken:
    """The outcome of `take`: the rate grant (when the call may go) and whether the slots
    are held (False: `full` names the key that had none free, or the rate deferred it)."""

    grant: Grant
    held: bool
    full: str | None = None


_EMPTY = {
    "requests_tat": 0.0,
    "tokens_tat": 0.0,
    "request_interval": 0.0,
    "token_interval": 0.0,
    "tokens_reserved": 0.0,
    "slow_request_interval": 0.0,
    "slow_token_interval": 0.0,
    "slow_until": 0.0,
    "provider_429s": 0,
}


def _lock(backend: Backend) -> Any:
    """An upsert that creates (empty) and locks a key's `flow_limits` row (`p_key`) and
    sets its `max_concurrent` (`p_max`); run as one executemany over the keys in order."""
    row = {
        "key": sa.bindparam("p_key", type_=sa.String()),
        "max_concurrent": sa.bindparam("p_max", type_=sa.Integer()),
    } | _EMPTY
    ins = backend.insert(f).values(row)
    return ins.on_conflict_do_update(
        index_elements=[f.c.key], set_={"max_concurrent": ins.excluded.max_concurrent}
    )


def _keys(name: str = "p_keys") -> Any:
    return sa.bindparam(name, expanding=True, type_=sa.String())


def _hold() -> Any:
    """A slot on every key of `p_keys` for `p_holder`, or none when one is full (one
    statement, run once the keys are locked: it sees every slot committed before)."""
    live = (
        sa.select(sa.func.count())
        .where(s.c.key == f.c.key, s.c.expires_at > sa.bindparam("p_now", type_=sa.Float()))
        .scalar_subquery()
    )
    full = sa.select(f.c.key).where(f.c.key.in_(_keys()), f.c.max_concurrent <= live)
    l2 = f.alias("l2")
    rows = sa.select(
        l2.c.key,
        sa.bindparam("p_holder", type_=sa.String()),
        sa.bindparam("p_expires", type_=sa.Float()),
    ).where(l2.c.key.in_(_keys()), ~sa.exists(full))
    return s.insert().from_select(["key", "holder", "expires_at"], rows).returning(s.c.key)


def _wake() -> Any:
    """The oldest waiter of `p_keys` still queued and not yet due, due at `p_at`."""
    at = sa.bindparam("p_at", type_=runs.c.available_at.type)
    oldest = (
        sa.select(w.c.run_id)
        .join(runs, runs.c.id == w.c.run_id)
        .where(
            w.c.key.in_(_keys()),
            runs.c.status == RunStatus.QUEUED.value,
            runs.c.available_at > at,
        )
        .order_by(w.c.since)
        .limit(1)
        .scalar_subquery()
    )
    return sa.update(runs).where(runs.c.id == oldest).values(available_at=at).returning(runs.c.id)


#: A waiter's run in one of these may still wait for a slot.
_WAITING = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)


def _due_if_free() -> Any:
    """Run `p_run`, still queued and not yet due, due at `p_at` when key `p_key` has a free
    slot (run once the key is locked: it sees every release committed before)."""
    at = sa.bindparam("p_at", type_=runs.c.available_at.type)
    key = sa.bindparam("p_key", type_=sa.String())
    live = (
        sa.select(sa.func.count())
        .where(s.c.key == key, s.c.expires_at > sa.bindparam("p_now", type_=sa.Float()))
        .scalar_subquery()
    )
    most = sa.select(f.c.max_concurrent).where(f.c.key == key).scalar_subquery()
    return (
        sa.update(runs)
        .where(
            runs.c.id == sa.bindparam("p_run", type_=sa.String()),
            runs.c.status == RunStatus.QUEUED.value,
            runs.c.available_at > at,
            live < most,
        )
        .values(available_at=at)
        .returning(runs.c.id)
    )


class FlowSlots:
    def __init__(self, backend: Backend, limits: FlowLimits) -> None:
        self.backend = backend
        self.limits = limits
        self._lock = _lock(backend)
        self._hold = _hold()
        self._wake = _wake()
        self._lock_for_release = backend.for_update(
            sa.select(f.c.key).where(f.c.key.in_(_keys())).order_by(f.c.key)
        )
        self._free = s.delete().where(
            s.c.key.in_(_keys()),
            sa.or_(
                s.c.holder == sa.bindparam("p_holder", type_=sa.String()),
                s.c.expires_at <= sa.bindparam("p_now", type_=sa.Float()),
            ),
        )
        self._due_if_free = _due_if_free()
        self._unwait = w.delete().where(w.c.run_id == sa.bindparam("p_run", type_=sa.String()))

    async def take(
        self,
        slots: Sequence[Slot],
        holder: str,
        run_id: str,
        now: float,
        expires_at: float,
        demands: Sequence[Demand] = (),
        slack: float = 0.0,
    ) -> Taken:
        """A slot on every key of `slots` for `holder` (until `expires_at`) and the rate
        reservation of `demands`, in one transaction. The slots are held only when every
        key has one free and the rate lets the call go within `slack` seconds; a full key
        reserves nothing and records `run_id` as its waiter."""
        most = {x.key: x.max_concurrent for x in slots}
        keys = sorted(most)
        # (every key the transaction writes, in one sorted order: takers never deadlock)
        locked = sorted(set(keys) | {d.key for d in demands})
        async with self.backend.transaction() as conn:
            await conn.execute(self._lock, [{"p_key": k, "p_max": most.get(k)} for k in locked])
            params = {"p_keys": keys, "p_holder": holder, "p_expires": expires_at, "p_now": now}
            if not (await conn.execute(self._hold, params)).first():
                return await self._refused(conn, slots, run_id, now)
            # (it waits for no slot now, even when a rate defers it: a release wakes another)
            await conn.execute(self._unwait, {"p_run": run_id})
            grant = Grant(now)
            if demands:
                stmt, values = self.limits.acquire_statement(demands, now)
                grant = self.limits.grant_of(
                    demands, now, (await conn.execute(stmt, values)).mappings()
                )
            if grant.go_at > now + slack:  # (deferred by a rate: it holds no slot meanwhile)
                gone = s.delete().where(s.c.key.in_(keys), s.c.holder == holder)
                await conn.execute(gone)
                return Taken(grant, False)
        return Taken(grant, True)

    async def _refused(self, conn: Any, slots: Sequence[Slot], run_id: str, now: float) -> Taken:
        """Which key is full; `run_id` waits for it (and the waiters that ended are
        forgotten: the rare path pays for the cleanup)."""
        keys = sorted(x.key for x in slots)
        counted = await conn.execute(
            sa.select(s.c.key, sa.func.count())
            .where(s.c.key.in_(keys), s.c.expires_at > now)
            .group_by(s.c.key)
        )
        used = {str(k): int(n) for k, n in counted.all()}
        full = next(
            (
                x.key
                for x in sorted(slots, key=lambda x: x.key)
                if used.get(x.key, 0) >= x.max_concurrent
            ),
            keys[0],
        )
        # (a running waiter is kept: refused a moment ago, its throttle not yet written)
        live = sa.select(runs.c.id).where(runs.c.status.in_(_WAITING))
        await conn.execute(w.delete().where(w.c.key.in_(keys), w.c.run_id.not_in(live)))
        waiter = self.backend.insert(w).values(key=full, run_id=run_id, since=now)
        await conn.execute(waiter.on_conflict_do_nothing())
        return Taken(Grant(now, full, "max_concurrent"), False, full)

    async def release(self, keys: Sequence[str], holder: str, now: datetime) -> str | None:
        """Free `holder`'s slots on `keys` (and the expired ones) and make the oldest run
        waiting for one of them due now (its id; None when none waits)."""
        params = {"p_keys": sorted(set(keys)), "p_holder": holder, "p_now": now.timestamp()}
        async with self.backend.transaction() as conn:
            await conn.execute(self._lock_for_release, params)
            await conn.execute(self._free, params)
            woken = (
                await conn.execute(self._wake, {"p_keys": params["p_keys"], "p_at": now})
            ).scalar()
            if woken is not None:
                await conn.execute(self._unwait, {"p_run": woken})
        if woken is None:
            return None
        self.backend.wake([(NOTIFY_CHANNEL, "")])
        return str(woken)

    async def recheck(self, run_id: str, key: str, now: datetime) -> bool:
        """After `run_id` was throttled for a full `key`: due now if a slot freed between
        its refusal and its throttle (a release then saw it running and woke no one).
        Under the key's lock, so a release is either seen here or sees the run waiting."""
        params = {"p_keys": [key], "p_key": key, "p_run": run_id, "p_at": now}
        async with self.backend.transaction() as conn:
            await conn.execute(self._lock_for_release, params)
            woken = (
                await conn.execute(self._due_if_free, params | {"p_now": now.timestamp()})
            ).first()
        if woken is None:
            return False
        self.backend.wake([(NOTIFY_CHANNEL, "")])
        return True

    async def waiters(self, key: str) -> list[str]:
        """The runs waiting for a slot of `key`, oldest first (tests)."""
        stmt = sa.select(w.c.run_id).where(w.c.key == key).order_by(w.c.since)
        async with self.backend.reader() as conn:
            return [str(r) for r in (await conn.execute(stmt)).scalars()]

    async def in_flight(self, key: str, now: float) -> int:
        """The live slots of `key` (tests and metrics)."""
        stmt = sa.select(sa.func.count()).where(s.c.key == key, s.c.expires_at > now)
        async with self.backend.reader() as conn:
            return int((await conn.execute(stmt)).scalar() or 0)
