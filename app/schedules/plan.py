"""What a schedule's due ticks become, decided without IO: which fire, which were missed
(catch-up), when the next one is; and what a tick does when the schedule's last run has
not ended (overlap). The firing (`app.schedules.firing`) applies these under the row's
lock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice

from app.schedules.cron import Cron, tick_offset

#: A tick fired later than this is late: `catchup: skip` lets it go.
LATE_AFTER = timedelta(seconds=60)
#: Ticks one pass fires of one schedule (`catchup: all` after a long stop goes on in the
#: next pass); and the most missed ticks one row counts.
FIRE_PER_PASS = 100
COUNT_LIMIT = 100_000
TINY = timedelta(microseconds=1)


@dataclass(frozen=True, slots=True)
class Missed:
    """A run of consecutive ticks that do not fire (`reason`: `catchup_window`: older than
    the window; `catchup`: the catch-up policy let it go)."""

    first: datetime
    last: datetime
    count: int
    reason: str


@dataclass(frozen=True, slots=True)
class Due:
    fire: list[datetime] = field(default_factory=list)  # oldest first
    missed: list[Missed] = field(default_factory=list)
    next_fire_at: datetime | None = None  # the first tick left for later


@dataclass(frozen=True, slots=True)
class Window:
    """A schedule's bounds: no tick before `start_at` or after `end_at`."""

    start_at: datetime | None = None
    end_at: datetime | None = None


def next_tick(cron: Cron, after: datetime, window: Window) -> datetime | None:
    """The first tick strictly after `after`, within `window`."""
    if window.start_at is not None and window.start_at > after:
        after = window.start_at - TINY
    tick = cron.after(after)
    if tick is None or (window.end_at is not None and tick > window.end_at):
        return None
    return tick


def due_at(schedule_id: str, tick: datetime | None, jitter_seconds: int) -> datetime | None:
    """When a worker fires `tick`: it plus its jitter."""
    if tick is None:
        return None
    return tick + tick_offset(f"{schedule_id}:{tick.isoformat()}", jitter_seconds)


def due(
    cron: Cron,
    first: datetime,
    now: datetime,
    *,
    catchup: str,
    window_seconds: int,
    bounds: Window,
    jitter: Callable[[datetime], timedelta] = lambda _: timedelta(0),
) -> Due:
    """The ticks from `first` (the schedule's `next_fire_at`, itself a tick) to `now`;
    `jitter(tick)`: the tick's delay, which lateness (`catchup: skip`) does not count."""
    until = now if bounds.end_at is None else min(now, bounds.end_at)
    if first > until:
        keep = bounds.end_at is None or first <= bounds.end_at
        return Due(next_fire_at=first if keep else None)
    horizon = now - timedelta(seconds=window_seconds)
    missed: list[Missed] = []
    start: datetime | None = first  # the first tick within the window
    if first < horizon:  # too old to fire whatever the policy: counted, not kept
        missed.append(_range(cron, first, horizon - TINY, "catchup_window"))
        start = next_tick(cron, horizon - TINY, bounds)
    rest = next_tick(cron, until, bounds)
    if start is None or start > until:
        return Due([], missed, rest)
    if catchup == "all":
        within = [start, *islice(cron.between(start, until), FIRE_PER_PASS)]
        if len(within) > FIRE_PER_PASS:
            rest = within[FIRE_PER_PASS]
        return Due(within[:FIRE_PER_PASS], missed, rest)
    newest = _newest(cron, start, until)
    late = now - newest - jitter(newest) > LATE_AFTER
    fire = [newest] if catchup == "latest" or not late else []
    let_go = newest - TINY if fire else newest
    if start <= let_go:
        missed.append(_range(cron, start, let_go, "catchup"))
    return Due(fire, missed, rest)


def _range(cron: Cron, first: datetime, until: datetime, reason: str) -> Missed:
    """The ticks from `first` (one) to `until`, counted up to `COUNT_LIMIT` (the row of a
    longer run of them says the limit, and its `last` is the limit's tick)."""
    count, last = 1, first
    for tick in islice(cron.between(first, until), COUNT_LIMIT - 1):
        count, last = count + 1, tick
    return Missed(first, last, count, reason)


def _newest(cron: Cron, start: datetime, until: datetime) -> datetime:
    """The last tick at most `until` (`start`, a tick, is the earliest it can be), found
    by looking back over growing spans, not by walking every tick from `start`."""
    span = timedelta(minutes=1)
    while until - span > start:
        found = list(cron.between(until - span, until))
        if found:
            return found[-1]
        span *= 4
    return [start, *cron.between(start, until)][-1]


#: What a tick does while the schedule's last run has not ended.
START, SKIP, BUFFER, CANCEL_AND_START = "start", "skip", "buffer", "cancel_and_start"


def on_overlap(overlap: str, running: bool, buffered: datetime | None) -> str:
    """The action for a tick under `overlap`, `running`: the last run has not ended;
    `buffered`: the tick buffered already (buffer_one keeps one)."""
    if not running or overlap == "allow_all":
        return START
    if overlap == "cancel_other":
        return CANCEL_AND_START
    if overlap == "buffer_one" and buffered is None:
        return BUFFER
    return SKIP
