"""Concurrency slots of the shared limits: at most `max_concurrent` model calls in flight
on a limit key, across every worker.

A call takes a slot (a `flow_slots` row: key, holder, expiry) on each of its keys that
has a `max_concurrent`, in one transaction that first locks the keys' `flow_limits` rows
(an upsert, in key order: concurrent takers queue on the lock, so they never count the
same free slot; SQLite has one writer). Taking the slots and the rate reservation
(`app.store.flow`) is the same transaction, so a refused call reserves nothing. A slot
expires by itself (about the lease length: a SIGKILLed worker's slot frees then) and is
otherwise deleted when the call ends (`release`). A full key records the refused run in
`flow_waiters`; the release of a slot makes the oldest waiting run that is still queued
due at once (and wakes the workers), under the same lock, so no wake-up is lost between
a refusal and a release (a release that wakes nobody forgets the waiters that ended).
Times are Unix seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import RunStatus
from app.store.backend.base import NOTIFY_CHANNEL, Backend
from app.store.flow import Demand, FlowLimits, Grant
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
    """An upsert that creates (empty) and locks a key's `flow_limits` row (`p_key`); run
    as one executemany over the keys in key order."""
    row = {"key": sa.bindparam("p_key", type_=sa.String())} | _EMPTY
    ins = backend.insert(f).values(row)
    return ins.on_conflict_do_update(
        index_elements=[f.c.key], set_={"provider_429s": f.c.provider_429s}
    )


class FlowSlots:
    def __init__(self, backend: Backend, limits: FlowLimits) -> None:
        self.backend = backend
        self.limits = limits
        self._lock = _lock(backend)

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
        keys = sorted({x.key for x in slots})
        # (every key the transaction writes, in one sorted order: takers never deadlock)
        locked = sorted(set(keys) | {d.key for d in demands})
        async with self.backend.transaction() as conn:
            await conn.execute(self._lock, [{"p_key": k} for k in locked])
            await conn.execute(s.delete().where(s.c.key.in_(keys), s.c.expires_at <= now))
            counted = await conn.execute(
                sa.select(s.c.key, sa.func.count()).where(s.c.key.in_(keys)).group_by(s.c.key)
            )
            used = {str(k): int(n) for k, n in counted.all()}
            for slot in sorted(slots, key=lambda x: x.key):
                if used.get(slot.key, 0) >= slot.max_concurrent:
                    waiter = self.backend.insert(w).values(key=slot.key, run_id=run_id, since=now)
                    await conn.execute(waiter.on_conflict_do_nothing())
                    return Taken(Grant(now, slot.key, "max_concurrent"), False, slot.key)
            grant = Grant(now)
            if demands:
                stmt, params = self.limits.acquire_statement(demands, now)
                rows = (await conn.execute(stmt, params)).mappings()
                grant = self.limits.grant_of(demands, now, rows)
            if grant.go_at > now + slack:
                return Taken(grant, False)
            await conn.execute(
                s.insert(), [{"key": k, "holder": holder, "expires_at": expires_at} for k in keys]
            )
            await conn.execute(w.delete().where(w.c.run_id == run_id))
        return Taken(grant, True)

    async def release(self, keys: Sequence[str], holder: str, now: datetime) -> str | None:
        """Free `holder`'s slots on `keys` and make the oldest run waiting for one of them
        due now (its id; None when none waits)."""
        keys = sorted(set(keys))
        oldest = (
            sa.select(w.c.run_id)
            .join(runs, runs.c.id == w.c.run_id)
            .where(
                w.c.key.in_(keys),
                runs.c.status == RunStatus.QUEUED.value,
                runs.c.available_at > now,
            )
            .order_by(w.c.since)
            .limit(1)
            .scalar_subquery()
        )
        wake = (
            sa.update(runs).where(runs.c.id == oldest).values(available_at=now).returning(runs.c.id)
        )
        async with self.backend.transaction() as conn:
            lock = sa.select(f.c.key).where(f.c.key.in_(keys)).order_by(f.c.key)
            await conn.execute(lock.with_for_update())
            await conn.execute(s.delete().where(s.c.key.in_(keys), s.c.holder == holder))
            woken = (await conn.execute(wake)).scalar()
            if woken is not None:
                await conn.execute(w.delete().where(w.c.run_id == woken))
            else:  # (nobody to wake: forget the waiters that ended or were woken otherwise)
                queued = sa.select(runs.c.id).where(runs.c.status == RunStatus.QUEUED.value)
                await conn.execute(w.delete().where(w.c.key.in_(keys), w.c.run_id.not_in(queued)))
        if woken is None:
            return None
        self.backend.wake([(NOTIFY_CHANNEL, "")])
        return str(woken)

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


def unix(at: datetime) -> float:
    return at.astimezone(UTC).timestamp()
