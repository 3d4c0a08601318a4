"""The one clock: the only module of `app` that reads the system's time.

Everything else is handed a `Clock` (the composition root, `app.main`, makes one and
passes it to what it builds), so a test can move time with a `FakeClock` instead of
sleeping. A clock gives three readings:

- `now()`: the wall time, an aware UTC datetime (what runs, events and keys store);
- `epoch()`: the wall time as seconds since the epoch (signed tokens' expiry);
- `monotonic()`: seconds from an arbitrary start that never go back, for intervals,
  caches, deadlines of waits and the durations logs and metrics report (the same clock as
  the event loop's `loop.time()` and `time.perf_counter()` on Linux).

`tests/test_clock.py` fails on a read of the system clock anywhere else in `app`.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from datetime import UTC, datetime, timedelta


class Clock(ABC):
    """What the service knows of time (the system's, or a test's)."""

    @abstractmethod
    def now(self) -> datetime: ...

    def epoch(self) -> float:
        return self.now().timestamp()

    @abstractmethod
    def monotonic(self) -> float: ...


class SystemClock(Clock):
    """The machine's clocks."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def epoch(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


#: The machine's clock: what `app.main` passes to everything it builds.
SYSTEM_CLOCK: Clock = SystemClock()


class FakeClock(Clock):
    """A clock that moves only when told (tests, demos). `advance` moves the wall time and
    the monotonic reading together; `set` moves the wall time alone (a wall-clock jump,
    which a monotonic reading never sees). It starts at `start` (default: the system's
    time now, so rows it stamps sit beside the database's own `now()`)."""

    def __init__(self, start: datetime | None = None, monotonic: float = 0.0) -> None:
        self._now = start if start is not None else SYSTEM_CLOCK.now()
        if self._now.tzinfo is None:
            raise ValueError("a FakeClock's time is aware (UTC)")
        self._monotonic = monotonic

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, by: float | timedelta) -> None:
        """Move time forward by `by` (seconds or a timedelta; never backward)."""
        seconds = by.total_seconds() if isinstance(by, timedelta) else float(by)
        if seconds < 0:
            raise ValueError("a clock does not go back: use set() for a wall-clock jump")
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds

    def set(self, when: datetime) -> None:
        """Put the wall time at `when` (either way); the monotonic reading stays."""
        if when.tzinfo is None:
            raise ValueError("a FakeClock's time is aware (UTC)")
        self._now = when
