"""The worker's side of the shared limits (`app.limits.rates_sql`): which limit keys a model call
draws on, what it reserves, and what a provider's 429 teaches every worker.

A call's keys: `profile:<provider>` (the profile's limits) and `model:<provider>/<model>`
(its `model_limits`) of the model the call goes to (the run's; for a summary, its own:
`budgets.model_of`), and `tenant:<tenant>` (the tenant's `requests_per_minute` /
`tokens_per_minute` / `max_concurrent`). A key with a `max_concurrent` also holds a
concurrency slot (`app.limits.slots_sql`) for the call's duration, freed right after it. A call
with no limit on any of them costs nothing: no statement, and with no limit configured
anywhere (`Profiles.limited()` false, no tenant limits) not even a lookup. Tokens are
reserved at most (the budget's input estimate plus the output cap) and the difference to
what the call used is refunded with this worker's next acquire of the same key (no extra
statement; lost if the worker stops: more conservative only).

A worker that draws on a key often asks for a batch of calls (as many as it drew on the
key in the last second, at most `MAX_BATCH`); what the store grants beyond the call itself
is handed to this worker's next calls on the key for `PERMIT_SECONDS`, with no statement.
Calls of a batch left unused when it lapses are spent (the bucket counted them: more
conservative only); its unused tokens go back with the next acquire.

A provider's 429 teaches the run's model key (and its configured profile key) even with
nothing configured (`provider_429`, the rule in `app.providers.ratelimit`): the store
slows the key for every worker and tells them (`heard`, from the worker's LISTEN); from
then until the key's slowdown has faded, this worker draws every call on the key as on a
configured one. Until a 429, a key with nothing configured costs no statement.
"""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import structlog

from app import metrics
from app.clock import Clock
from app.limits.budgets import cap_param, input_estimate, model_of
from app.limits.rates_sql import Demand, FlowLimits, Grant, Learned, parse_learned
from app.limits.slots_sql import FlowSlots, Slot
from app.providers import ratelimit
from app.providers.base import ModelRequest, ProviderError
from app.providers.profiles import Profiles, RateLimits
from app.store.changes import RateLimit
from app.store.run_records import RunRecord

log = structlog.get_logger("agentrun.worker")

TenantLimitsOf = Callable[[str], Awaitable[Mapping[str, Any]]]

#: A batch's calls are this worker's for so long (then spent: the provider counts calls as
#: they arrive, so calls sent later than reserved must not be many).
PERMIT_SECONDS = 1.0
#: At most so many calls in one batch.
MAX_BATCH = 16
#: A failed slot release is retried after this long, then twice as long (up to 5 s).
RELEASE_RETRY_SECONDS = 0.25
#: A call whose reserved turn is this close waits for it under its lease (a throttle and a
#: claim cost more than the wait); a later turn throttles the run back to the queue.
SLACK = timedelta(seconds=1)

#: A first 429 with no limit named or configured seeds the rate from the calls the
#: provider answered this worker in so many seconds before it.
OBSERVED_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class Reserved:
    """A call's reservation: the keys it drew tokens on and how many, and the keys whose
    concurrency slots it holds (as `holder`) until `release`."""

    keys: tuple[str, ...]
    tokens: float
    slot_keys: tuple[str, ...] = ()
    holder: str = ""
    slots_until: float = 0.0  # (when the slots expire by themselves, Unix seconds)
    honoured: bool = False  # (the run's reservation, kept when it was throttled, was used)


@dataclass(frozen=True, slots=True)
class Deferred:
    """The call may not go now: the run goes back to the queue with `reason`, due at
    `due`, holding the turn `held` (None: it holds none, e.g. a full `max_concurrent`)."""

    reason: RateLimit
    due: datetime
    held: datetime | None


@dataclass(slots=True)
class _Permits:
    """What is left of a batch on one key: calls, tokens, and until when (Unix seconds)."""

    calls: int
    tokens: float
    until: float
    limits: tuple[int | None, int | None] = (None, None)  # (the rates it was granted at)


def _since(times: deque[float] | None, start: float) -> int:
    return 0 if times is None else sum(1 for t in times if t >= start)


class Flow:
    """The shared limits of one worker. `profiles`: the deployment's profiles (an empty
    `Profiles`: none limit); `tenant_limits`: a tenant's stored limits (cached)."""

    def __init__(
        self,
        limits: FlowLimits,
        slots: FlowSlots,
        profiles: Profiles | None = None,
        tenant_limits: TenantLimitsOf | None = None,
        default_cap: int = 4096,
        *,
        lease_seconds: float = 30.0,
        provider_timeout: float = 120.0,
        clock: Clock,
    ) -> None:
        self.limits = limits
        self.clock = clock
        self.slots = slots
        self.profiles = profiles or Profiles({})
        self.tenant_limits = tenant_limits
        self.default_cap = default_cap
        self.lease_seconds = lease_seconds
        self.provider_timeout = provider_timeout
        self._refunds: dict[str, float] = {}  # tokens to give back, by key
        self._permits: dict[str, _Permits] = {}  # the rest of a batch, by key
        self._drawn: dict[str, deque[float]] = {}  # this worker's recent draws, by key
        self._releasing: set[asyncio.Task[None]] = set()  # releases retried after a failure
        self._learned: dict[str, float] = {}  # keys a 429 slowed, until when (Unix seconds)
        self._calls: dict[str, deque[float]] = {}  # recent calls and 429s by model key
        self._refused: dict[str, deque[float]] = {}  # (monotonic: the seed's only)

    async def rates(
        self, record: RunRecord, model: tuple[str, str] | None = None
    ) -> dict[str, RateLimits]:
        """The limit keys of a call of the run that limit anything, with their limits;
        `model`: the (provider, name) it goes to (None: the run's own)."""
        out: dict[str, RateLimits] = {}
        if model is None:
            model = (record.run_config.model.provider, record.run_config.model.name)
        provider, name = model
        model_key = f"model:{provider}/{name}"
        self._count(self._calls, model_key)
        if self.profiles.limited():
            profile = self.profiles.get(provider)
            if profile is not None:
                out[f"profile:{provider}"] = profile.limits
                out[model_key] = profile.limits_of(name)
        if self.tenant_limits is not None:
            doc = await self.tenant_limits(record.tenant_id)
            rpm, tpm = doc.get("requests_per_minute"), doc.get("tokens_per_minute")
            most = doc.get("max_concurrent")
            if rpm is not None or tpm is not None or most is not None:
                out[f"tenant:{record.tenant_id}"] = RateLimits(rpm, tpm, most)
        learned = self._learned_keys(provider, model_key) if self._learned else ()
        for key in learned:
            out.setdefault(key, RateLimits())
        return {k: v for k, v in out.items() if not v.empty() or k in learned}

    def _learned_keys(self, provider: str, model_key: str) -> list[str]:
        """The run's keys a 429 slowed, still slowed (the lapsed ones are forgotten)."""
        now = self.clock.epoch()
        for key in [k for k, until in self._learned.items() if until <= now]:
            del self._learned[key]
        return [k for k in (f"profile:{provider}", model_key) if k in self._learned]

    def heard(self, payload: str) -> None:
        """Another worker's 429 slowed these keys (a `FLOW_CHANNEL` notification): draw
        on them until then."""
        self._slowed(parse_learned(payload))

    async def catch_up(self, now: datetime) -> None:
        """Learn the keys slowed while this worker was not listening (at start, after its
        LISTEN reconnected); a failure leaves it to learn from its own 429."""
        try:
            self._slowed(await self.limits.slowed(now.timestamp()))
        except Exception:
            log.warning("reading the slowed keys failed", exc_info=True)

    def _slowed(self, keys: Mapping[str, float]) -> None:
        for key, until in keys.items():
            self._learned[key] = max(until, self._learned.get(key, 0.0))

    def _count(self, times: dict[str, deque[float]], key: str) -> None:
        """Note a call (or a 429) on `key` (the last 64: enough for a seed)."""
        recent = times.get(key)
        if recent is None:
            recent = times[key] = deque(maxlen=64)
        recent.append(self.clock.monotonic())

    async def gate(
        self,
        record: RunRecord,
        honoured: bool,
        request: ModelRequest,
        rates: Mapping[str, RateLimits],
        now: datetime,
    ) -> Reserved | Deferred:
        """Draw the call on the run's shared limits: its reservation once it may go (a
        turn within `SLACK` is waited for here), else where the run waits. `honoured`:
        the run's kept reservation was already used by an earlier call of this claim."""
        held = record.flow_reserved_at
        provider = model_of(record, request)[0]
        fresh = timedelta(seconds=self.lease_seconds)
        # A slot outlives neither the lease nor the call's timeout (a dead worker's frees).
        timeout = self.timeout_of(provider) or self.provider_timeout
        slot_seconds = max(self.lease_seconds, timeout)
        honour = held is not None and not honoured and now - fresh <= held <= now + SLACK
        grant, reserved = await self.acquire(
            rates,
            self.most_tokens(request, provider),
            now,
            record.id,
            slot_seconds,
            SLACK.total_seconds() if not honour else float("inf"),
            rated=not honour,
        )
        if grant.limit == "max_concurrent":  # (no slot free: woken by a release)
            assert grant.key is not None
            metrics.flow_wait(grant.key, grant.limit)
            # (due after a lease at the latest, should the release's wake-up be lost)
            reason = RateLimit(grant.limit, grant.key, None)
            return Deferred(reason, now + fresh, held if honour else None)
        if honour:
            assert held is not None
            await asyncio.sleep(max(0.0, (held - now).total_seconds()))
            return dataclasses.replace(reserved, honoured=True)  # (not drawn twice)
        go_at = datetime.fromtimestamp(grant.go_at, UTC)
        if go_at <= now + SLACK:
            await asyncio.sleep(max(0.0, (go_at - now).total_seconds()))
            return reserved
        assert grant.key is not None and grant.limit is not None
        metrics.flow_wait(grant.key, grant.limit)
        return Deferred(RateLimit(grant.limit, grant.key, go_at), go_at, go_at)

    def timeout_of(self, provider: str) -> float | None:
        """The profile's call timeout (a slot is held at most that long, or a lease)."""
        profile = self.profiles.get(provider)
        return None if profile is None else profile.timeout_seconds

    def most_tokens(self, request: ModelRequest, provider: str) -> int:
        """What the call may use at most: the input estimate and the output cap."""
        where = cap_param(provider, request.params)
        cap = where.current if where is not None and where.current else self.default_cap
        return input_estimate(request, provider) + cap

    async def acquire(
        self,
        rates: Mapping[str, RateLimits],
        tokens: int,
        now: datetime,
        run_id: str = "",
        slot_seconds: float = 0.0,
        slack: float = 0.0,
        rated: bool = True,
    ) -> tuple[Grant, Reserved]:
        """Reserve the call on every key (one statement; with a `max_concurrent` on any,
        one transaction that also takes a slot on each, held for at most `slot_seconds`
        when the call may go within `slack`); when it may go. `rated` False: the rate
        reservation is already held (a throttled run's), only the slots are taken. A
        grant whose `limit` is `max_concurrent` is a refusal: a key had no free slot."""
        at = now.timestamp()
        demands = []
        drawn = []
        counts: dict[str, bool] = {}  # (the keys drawn on: whether they count tokens)
        for key, r in rates.items():
            learned = key in self._learned
            if not rated or not (r.requests_per_minute or r.tokens_per_minute or learned):
                continue
            counts[key] = bool(r.tokens_per_minute) or learned
            if counts[key]:
                drawn.append(key)
            batch = self._draw(key, at)
            if self._from_batch(key, r, tokens, at, counts[key]):
                continue
            refund = self._refunds.pop(key, 0.0) if counts[key] else 0.0
            net = tokens - refund if counts[key] else 0.0
            demands.append(
                Demand(key, r.requests_per_minute, r.tokens_per_minute, net, batch, tokens, learned)
            )
        slots = [Slot(k, r.max_concurrent) for k, r in rates.items() if r.max_concurrent]
        reserved = Reserved(tuple(drawn), float(tokens))
        if not slots:
            grant = await self.limits.acquire(demands, at) if demands else Grant(at)
            self._keep(grant, rates, counts, tokens, at)
            return grant, reserved
        holder = f"{run_id}:{uuid.uuid4().hex[:16]}"
        taken = await self.slots.take(slots, holder, run_id, at, at + slot_seconds, demands, slack)
        self._keep(taken.grant, rates, counts, tokens, at)
        if not taken.held:
            return taken.grant, reserved
        keys = tuple(s.key for s in slots)
        return taken.grant, Reserved(reserved.keys, float(tokens), keys, holder, at + slot_seconds)

    def _draw(self, key: str, at: float) -> int:
        """Count a draw on `key`: the calls to ask for (this worker's draws of a second)."""
        recent = self._drawn.get(key)
        if recent is None:
            recent = self._drawn[key] = deque(maxlen=MAX_BATCH)
        recent.append(at)
        while recent[0] < at - PERMIT_SECONDS:
            recent.popleft()
        return len(recent)

    def _from_batch(
        self, key: str, r: RateLimits, tokens: int, at: float, counts_tokens: bool
    ) -> bool:
        """Take the call from this worker's batch on `key`, if one is left and current
        (granted at the key's rates in force: a changed limit spends it)."""
        left = self._permits.get(key)
        if left is None:
            return False
        if (
            left.until <= at
            or left.calls < 1
            or left.limits != (r.requests_per_minute, r.tokens_per_minute)
            or (counts_tokens and left.tokens < tokens)
        ):
            del self._permits[key]  # (spent: its calls are lost, its tokens go back)
            if left.tokens > 0:  # (only a batch granted with a token limit holds any)
                self._refunds[key] = self._refunds.get(key, 0.0) + left.tokens
            return False
        left.calls -= 1
        left.tokens -= tokens if counts_tokens else 0
        return True

    def _keep(
        self,
        grant: Grant,
        rates: Mapping[str, RateLimits],
        counts: Mapping[str, bool],
        tokens: int,
        at: float,
    ) -> None:
        """Keep what a grant reserved beyond the call itself, for this worker's next calls
        (tokens only on a key that counted them)."""
        for key, n in grant.granted:
            if n > 1:
                r = rates[key]
                held = (n - 1) * tokens if counts.get(key) else 0.0
                limits = (r.requests_per_minute, r.tokens_per_minute)
                self._permits[key] = _Permits(n - 1, held, at + PERMIT_SECONDS, limits)

    async def recheck(self, run_id: str, key: str, now: datetime) -> None:
        """A run just throttled for a full `key`: due at once if a slot freed meanwhile (a
        failure leaves it to its fallback: due after a lease)."""
        try:
            await self.slots.recheck(run_id, key, now)
        except Exception:
            log.warning("slot recheck failed", key=key, exc_info=True)

    async def release(self, reserved: Reserved | None, now: datetime) -> None:
        """Free the call's slots (right after it ends): the oldest run waiting for one is
        due at once. A release that fails (the database went away) is retried in the
        background until it succeeds or the slots expired by themselves, so an outage does
        not leave a key's slots held for their whole lifetime."""
        if reserved is None or not reserved.slot_keys:
            return
        try:
            await self.slots.release(reserved.slot_keys, reserved.holder, now)
        except Exception:
            log.warning("slot release failed; retrying", keys=reserved.slot_keys, exc_info=True)
            task = asyncio.get_running_loop().create_task(self._release_later(reserved))
            self._releasing.add(task)
            task.add_done_callback(self._releasing.discard)

    async def _release_later(self, reserved: Reserved) -> None:
        delay = RELEASE_RETRY_SECONDS
        while True:
            await asyncio.sleep(delay)
            now = self.clock.now()
            if now.timestamp() >= reserved.slots_until:
                return  # (expired by themselves: nothing left to free)
            try:
                await self.slots.release(reserved.slot_keys, reserved.holder, now)
            except Exception:
                delay = min(delay * 2, 5.0)
                continue
            log.info("slot released after a retry", keys=reserved.slot_keys)
            return

    def used(self, reserved: Reserved, total_tokens: int | None) -> None:
        """The call used `total_tokens` of what it reserved: the rest goes back with the
        next acquire of each key."""
        if total_tokens is None:
            return
        back = reserved.tokens - total_tokens
        if back > 0:
            for key in reserved.keys:
                self._refunds[key] = self._refunds.get(key, 0.0) + back

    async def provider_429(
        self,
        rates: Mapping[str, RateLimits],
        err: ProviderError,
        at: datetime,
        record: RunRecord | None = None,
        model: tuple[str, str] | None = None,
    ) -> float:
        """Feed a provider's 429 to the call's configured profile and model keys, and to
        its model key even with nothing configured (`model`: the (provider, name) the call
        went to; else `record`'s, the run's model): the seconds every worker now waits on
        them."""
        now = at.timestamp()
        seconds = err.retry_after if err.retry_after is not None else 1.0
        rpm, tpm = ratelimit.named_limits(err.headers)
        keys = {k: r for k, r in rates.items() if k.startswith(("profile:", "model:"))}
        if model is None and record is not None:
            model = (record.run_config.model.provider, record.run_config.model.name)
        if model is not None:
            keys.setdefault(f"model:{model[0]}/{model[1]}", RateLimits())
        learned = []
        for key, r in keys.items():
            self._permits.pop(key, None)  # (this worker's batch goes no further)
            first = None
            if r.requests_per_minute is None and rpm is None:  # (no rate known: a seed)
                self._count(self._refused, key)
                start = self.clock.monotonic() - OBSERVED_SECONDS
                answered = _since(self._calls.get(key), start) - _since(self._refused[key], start)
                first = ratelimit.seed(answered, OBSERVED_SECONDS)
            lr = ratelimit.taught(rpm, r.requests_per_minute)
            lt = ratelimit.taught(tpm, r.tokens_per_minute)
            learned.append(Learned(key, lr, lt, first))
        self._slowed(await self.limits.feed_429(learned, now, seconds))
        metrics.flow_429(x.key for x in learned)
        return seconds
