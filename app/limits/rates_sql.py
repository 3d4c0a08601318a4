"""Shared limits in the database: every worker's model calls draw from the same buckets.

A limit key (`profile:<p>`, `model:<p>/<m>`, `tenant:<t>`) has one row of `flow_limits`
holding a GCRA bucket (generic cell rate algorithm: a token bucket kept as one time) per
kind: requests and tokens per minute. `tat` is the bucket's theoretical arrival time: the
bucket refills a minute's worth a minute and holds 90 % of that (`BURST_SECONDS`), so a
call may go once `tat - 54 s` has passed. An acquire always succeeds: it moves `tat` on by
the call's cost (its reservation, even when the call has to wait) and returns when the
call may go, so a deferred run holds its own turn and never acquires again for that call. Tokens are
reserved at most (the input estimate plus the output cap) and corrected later: the
difference rides along as a negative cost in the next acquire of the same key.

A worker drawing often on a key asks for a batch: as many calls as it drew on the key in
the last second (`Demand.batch`). The statement grants the batch only while the bucket is
at most half used after it (`HALF_SECONDS`), else the one call; `granted` says which, and
the worker hands the rest out to its own calls for a second without a statement. Near a
limit every call is one reservation, as without batches; far from it a busy worker pays
one statement per batch instead of one per call.

A provider's 429 (`feed_429`) pushes the keys' buckets empty until its hint has passed
(`tat = now + hint + 54 s`: no burst after it either) and slows their rate: to the limit the
provider's headers name when lower, else the rate in force × 0.8; the slower rate fades
back to the configured one over `SLOW_SECONDS`. A key with no limit configured is one
whose configured rate is unlimited: its first 429 creates its row, at the named limit
(else at a seed from the calls lately answered), fading back to no limit; the keys and
until when they are slowed go to every worker on `FLOW_CHANNEL` (NOTIFY), so that every
worker draws on them from then on (and only then: a key with nothing configured and no
429 costs no statement). One statement per acquire (all the run's
keys as one multi-row upsert, rows in key order so concurrent acquires never deadlock)
and one per key and 429; the same SQL on PostgreSQL and SQLite (`INSERT … ON CONFLICT DO UPDATE
… RETURNING`, CASE for max). Times are Unix seconds.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from app.store.backend.base import Backend, Row
from app.store.schema import flow_limits, flow_slots

f = flow_limits

#: A bucket refills a minute's worth a minute.
WINDOW_SECONDS = 60.0
#: ...and holds 90 % of it: a burst goes out over time (calls reach the provider later
#: than they reserved), and the provider's own bucket counts from their arrival; the 10 %
#: absorbs that skew, so a limit set to the quota sees no 429 after the burst.
BURST_SECONDS = 0.9 * WINDOW_SECONDS
#: A batch is granted only while the bucket stays at most this full after it.
HALF_SECONDS = BURST_SECONDS / 2
#: How long a rate a 429 taught takes to fade back to the configured one.
SLOW_SECONDS = 300.0
#: Each 429 without a limit header slows the rate in force by this factor.
SLOWDOWN = 0.8
#: NOTIFY channel of the keys a 429 slowed (payload: `learned_payload`).
FLOW_CHANNEL = "agentrun_flow"


@dataclass(frozen=True, slots=True)
class Demand:
    """What a model call asks of one key: its configured rates (None: that kind is not
    limited), the net tokens it reserves (its maximum, less earlier refunds), and the
    calls it asks for (`batch`: itself and `batch - 1` more of `per_call` tokens each).
    `learned`: a 429 slowed the key lately, so its tokens count even with no token limit
    configured (the store reserves them only while a token rate is in force)."""

    key: str
    requests_per_minute: int | None
    tokens_per_minute: int | None
    tokens: float = 0.0
    batch: int = 1
    per_call: float = 0.0
    learned: bool = False

    def first_row(self) -> tuple[int, float]:
        """The calls and tokens a new (empty) bucket grants: the batch when it fits in
        half the bucket, else the one call."""
        ri, ti = _interval(self.requests_per_minute), _interval(self.tokens_per_minute)
        tokens = self.tokens + (self.batch - 1) * self.per_call
        if self.batch > 1 and max(self.batch * ri, tokens * ti) <= HALF_SECONDS:
            return self.batch, tokens
        return 1, self.tokens


@dataclass(frozen=True, slots=True)
class Grant:
    """When the call may go (Unix seconds) and which limit decided it (None: at once);
    `granted`: the calls reserved on each key (more than one: a batch)."""

    go_at: float
    key: str | None = None
    limit: str | None = None
    granted: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Learned:
    """What a 429 taught about one key: the limits its headers named (per minute), and
    the requests per minute to start from when the key had no rate at all (`seed`)."""

    key: str
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    seed: float | None = None


@dataclass(frozen=True, slots=True)
class Bucket:
    """A key's state as the metrics read it."""

    key: str
    requests_used: float  # requests of the last minute's worth (0..rpm)
    tokens_used: float
    provider_429s: int
    calls_in_flight: int | None = None  # (a key with a `max_concurrent`: its live slots)


def _interval(per_minute: float | None) -> float:
    return 0.0 if not per_minute else WINDOW_SECONDS / per_minute


def _float_param(name: str) -> Any:
    return sa.cast(sa.bindparam(name, type_=sa.Float()), sa.Float())


def _max(a: Any, b: Any) -> Any:
    return sa.case((a > b, a), else_=b)


def _in_force(configured: Any, slow: Any, now: Any) -> Any:
    """The interval in force: the slower one a 429 taught, fading linearly back to the
    configured one until `slow_until`."""
    left = (f.c.slow_until - now) / SLOW_SECONDS
    fading = configured + (slow - configured) * left
    return sa.case(
        (sa.and_(f.c.slow_until > now, slow > configured), fading),
        else_=configured,
    )


_ROW = (
    "key",
    "requests_tat",
    "tokens_tat",
    "request_interval",
    "token_interval",
    "tokens_reserved",
    "granted",
)


class FlowLimits:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._acquire: dict[int, Any] = {}
        self._feed: Any = None

    def _acquire_statement(self, n: int) -> Any:
        """The upsert of `n` keys (compiled once per count)."""
        stmt = self._acquire.get(n)
        if stmt is None:
            now = sa.bindparam("p_now", type_=sa.Float())
            zero = {
                "slow_request_interval": 0.0,
                "slow_token_interval": 0.0,
                "slow_until": 0.0,
                "provider_429s": 0,
            }
            rows = [
                {c: sa.bindparam(f"p_{c}_{i}", type_=f.c[c].type) for c in _ROW} | zero
                for i in range(n)
            ]
            ins = self.backend.insert(f).values(rows)
            x = ins.excluded
            per_call = sa.bindparam("p_per_call", type_=sa.Float())
            requests = _in_force(x.request_interval, f.c.slow_request_interval, now)
            tokens = _in_force(x.token_interval, f.c.slow_token_interval, now)
            r_from = _max(f.c.requests_tat, now)
            t_from = _max(f.c.tokens_tat, now)
            # (the proposed row carries the batch asked: granted while it fits in half)
            fits = sa.and_(
                r_from + x.granted * requests <= now + HALF_SECONDS,
                t_from + x.tokens_reserved * tokens <= now + HALF_SECONDS,
            )
            granted = sa.case((fits, x.granted), else_=1)
            reserved = sa.case(  # (the batch's tokens, less those of calls not granted)
                (
                    # (configured; or learned, a token rate in force and tokens sent)
                    sa.or_(x.token_interval > 0, sa.and_(tokens > 0, x.tokens_reserved > 0)),
                    x.tokens_reserved - (x.granted - granted) * per_call,
                ),
                else_=0.0,
            )
            stmt = ins.on_conflict_do_update(
                index_elements=[f.c.key],
                set_={
                    "requests_tat": r_from + granted * requests,
                    "tokens_tat": t_from + reserved * tokens,
                    "request_interval": x.request_interval,
                    "token_interval": x.token_interval,
                    "tokens_reserved": reserved,
                    "granted": granted,
                },
            ).returning(f.c.key, f.c.requests_tat, f.c.tokens_tat, f.c.granted)
            self._acquire[n] = stmt
        return stmt

    async def acquire(self, demands: Sequence[Demand], now: float) -> Grant:
        """Reserve one call on every key of `demands` (one statement); when it may go."""
        stmt, params = self.acquire_statement(demands, now)
        return self.grant_of(demands, now, await self.backend.fetch(stmt, params))

    def acquire_statement(
        self, demands: Sequence[Demand], now: float
    ) -> tuple[Any, dict[str, Any]]:
        """The reservation's statement and parameters (`app.limits.slots_sql` runs it in the
        transaction that takes the slots)."""
        per_call = max((d.per_call for d in demands), default=0.0)
        params: dict[str, Any] = {"p_now": now, "p_per_call": per_call}
        for i, d in enumerate(sorted(demands, key=lambda d: d.key)):
            ri, ti = _interval(d.requests_per_minute), _interval(d.tokens_per_minute)
            n, tokens = d.first_row()
            tokens = tokens if ti or d.learned else 0.0
            values = (d.key, now + n * ri, now + tokens * ti, ri, ti, tokens, n)
            params.update({f"p_{c}_{i}": v for c, v in zip(_ROW, values, strict=True)})
        return self._acquire_statement(len(demands)), params

    def grant_of(self, demands: Sequence[Demand], now: float, result: Iterable[Row]) -> Grant:
        """When the call may go, from the rows the reservation returned."""
        by_key = {d.key: d for d in demands}
        grant = Grant(now)
        granted = []
        for row in result:
            granted.append((str(row["key"]), int(row["granted"])))
            d = by_key[row["key"]]
            for tat, limit, interval in (
                (row["requests_tat"], "requests_per_minute", _interval(d.requests_per_minute)),
                (row["tokens_tat"], "tokens_per_minute", _interval(d.tokens_per_minute)),
            ):
                # (a bucket always holds one call, however low its rate)
                go = float(tat) - max(BURST_SECONDS, interval)
                if go > grant.go_at:
                    grant = Grant(go, str(row["key"]), limit)
        return Grant(grant.go_at, grant.key, grant.limit, tuple(granted))

    def _feed_statement(self) -> Any:
        if self._feed is None:
            # (cast: a parameter compared with a literal 0 would be typed an integer)
            now = _float_param("p_now")
            block = _float_param("p_block")
            taught_r = _float_param("p_taught_r")
            taught_t = _float_param("p_taught_t")
            seed_r = _float_param("p_seed_r")
            in_force_r = _in_force(f.c.request_interval, f.c.slow_request_interval, now)
            in_force_t = _in_force(f.c.token_interval, f.c.slow_token_interval, now)
            # A limit the headers name is the rate itself; without one, slow down a step
            # (a key with no rate in force: the seed). (429s of calls already in flight
            # within a second are one lesson, not many)
            recent = f.c.slow_until > now + (SLOW_SECONDS - 1.0)
            slow_r = sa.case(
                (taught_r > 0, _max(in_force_r, taught_r)),
                (recent, f.c.slow_request_interval),
                (in_force_r > 0, in_force_r / SLOWDOWN),
                else_=seed_r,
            )
            slow_t = sa.case(
                (taught_t > 0, _max(in_force_t, taught_t)),
                (recent, f.c.slow_token_interval),
                else_=in_force_t / SLOWDOWN,
            )
            first = {  # (a key with nothing configured: its first 429 makes its row)
                "key": sa.bindparam("p_key", type_=sa.String()),
                "requests_tat": block,
                "tokens_tat": block,
                "request_interval": 0.0,
                "token_interval": 0.0,
                "tokens_reserved": 0.0,
                "slow_request_interval": sa.case((taught_r > 0, taught_r), else_=seed_r),
                "slow_token_interval": taught_t,
                "slow_until": now + SLOW_SECONDS,
                "provider_429s": 1,
            }
            self._feed = (
                self.backend.insert(f)
                .values(first)
                .on_conflict_do_update(
                    index_elements=[f.c.key],
                    set_={
                        "requests_tat": _max(f.c.requests_tat, block),
                        "tokens_tat": _max(f.c.tokens_tat, block),
                        "slow_request_interval": slow_r,
                        "slow_token_interval": slow_t,
                        "slow_until": now + SLOW_SECONDS,
                        "provider_429s": f.c.provider_429s + 1,
                    },
                )
                .returning(f.c.key, f.c.slow_until)
            )
        return self._feed

    async def feed_429(
        self, learned: Sequence[Learned], now: float, hint: float
    ) -> dict[str, float]:
        """A provider answered 429: every worker's calls on these keys wait `hint` and go
        slower (a statement per key: a 429 is rare). Until when each key is slowed; every
        worker is told (`FLOW_CHANNEL`)."""
        slowed: dict[str, float] = {}
        for item in sorted(learned, key=lambda x: x.key):
            params = {
                "p_key": item.key,
                "p_now": now,
                "p_block": now + hint + BURST_SECONDS,
                "p_taught_r": _interval(item.requests_per_minute),
                "p_taught_t": _interval(item.tokens_per_minute),
                "p_seed_r": _interval(item.seed),
            }
            for row in await self.backend.fetch(self._feed_statement(), params):
                slowed[str(row["key"])] = float(row["slow_until"])
        if slowed:
            self.backend.wake([(FLOW_CHANNEL, learned_payload(slowed))])
        return slowed

    async def slowed(self, now: float) -> dict[str, float]:
        """The keys a 429 slowed that are still slowed, and until when (a worker catching
        up with the notifications it missed: at start, after its LISTEN reconnected)."""
        stmt = sa.select(f.c.key, f.c.slow_until).where(f.c.slow_until > now)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return {str(key): float(until) for key, until in rows}

    async def slow_rates(self) -> dict[str, float]:
        """The requests per minute a 429 taught, by key (benches and tests)."""
        stmt = sa.select(f.c.key, f.c.slow_request_interval).where(f.c.slow_request_interval > 0)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return {key: round(WINDOW_SECONDS / interval, 1) for key, interval in rows}

    async def buckets(self, now: float) -> list[Bucket]:
        """Every key's use of its last minute, and its calls in flight (for /metrics: a row
        per key, and a count of its live slots by the slots' key)."""
        s = flow_slots
        live = (
            sa.select(sa.func.count())
            .where(s.c.key == f.c.key, s.c.expires_at > sa.bindparam("p_now", type_=sa.Float()))
            .scalar_subquery()
        )
        stmt = sa.select(
            f.c.key,
            f.c.requests_tat,
            f.c.tokens_tat,
            f.c.request_interval,
            f.c.token_interval,
            f.c.provider_429s,
            sa.case((f.c.max_concurrent.is_not(None), live), else_=None),
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt, {"p_now": now})).all()
        out = []
        for key, rt, tt, ri, ti, n, held in rows:
            used_r = max(0.0, rt - now) / ri if ri else 0.0
            used_t = max(0.0, tt - now) / ti if ti else 0.0
            out.append(Bucket(key, used_r, used_t, int(n), None if held is None else int(held)))
        return out


def learned_payload(slowed: Mapping[str, float]) -> str:
    """The NOTIFY payload naming the keys a 429 slowed and until when (Unix seconds)."""
    return json.dumps(slowed, separators=(",", ":"))


def parse_learned(payload: str) -> dict[str, float]:
    """`learned_payload`'s keys back (nothing from a payload that is not one)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items() if isinstance(v, int | float)}
