"""What a schedule's due ticks become, decided without IO: which fire, which were missed
(catch-up), when the next one is; and what a tick does when the schedule's last run has
not ended (overlap). The firing (`app.schedules.firing`) applies these under the row's
lock."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from itertools import islice

from app.schedules.cron import Cron, tick_offset

#: A tick fired later than this is late: `catchup: skip` lets it go.
LATE_AFTER = timedelta(seconds=60)
#: Ticks one pass fires of one schedule (`catchup: all` after a long stop goes on in the
#: next pass); and the missed ticks it counts one by one before it jumps.
FIRE_PER_PASS = 100
COUNT_LIMIT = 10_000
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
) -> Due:
    """The ticks from `first` (the schedule's `next_fire_at`, itself a tick) to `now`."""
    until = now if bounds.end_at is None else min(now, bounds.end_at)
    if first > until:
        return Due(next_fire_at=first if first <= (bounds.end_at or first) else None)
    horizon = now - timedelta(seconds=window_seconds)
    missed: list[Missed] = []
    tick: datetime | None = first
    if first < horizon:  # too old to fire whatever the policy: counted, not kept
        old = [first, *islice(cron.between(first, horizon - TINY), COUNT_LIMIT)]
        missed.append(Missed(old[0], old[-1], len(old), "catchup_window"))
        tick = next_tick(cron, max(old[-1], horizon - TINY), bounds)
    within: list[datetime] = []
    if tick is not None and tick <= until:
        limit = FIRE_PER_PASS + 1 if catchup == "all" else COUNT_LIMIT
        within = [tick, *islice(cron.between(tick, until), limit - 1)]
    fire: list[datetime] = []
    rest = next_tick(cron, until, bounds)
    if catchup == "all":
        fire = within[:FIRE_PER_PASS]
        if len(within) > FIRE_PER_PASS:
            rest = within[FIRE_PER_PASS]
    elif within:
        newest = within[-1]
        if catchup == "latest" or now - newest <= LATE_AFTER:
            fire = [newest]
            let_go = within[:-1]
        else:
            let_go = within
        if let_go:
            missed.append(Missed(let_go[0], let_go[-1], len(let_go), "catchup"))
    return Due(fire, missed, rest)


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
