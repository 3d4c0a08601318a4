"""Failed-authentication throttling, per client address and per API process.

After `limit` failed attempts (a wrong or missing API key, a wrong dashboard login) from
one address within `window` seconds, that address is refused with 429 and `Retry-After`
until the oldest of those failures leaves the window, before its key is even compared:
guessing keys costs the guesser time, not the service CPU. A success does not clear the
record (one valid key must not buy unlimited guesses of others). Memory is bounded: the
least recently failing addresses are forgotten first.

Behind a reverse proxy the client address is what uvicorn reports (its `--proxy-headers`
/ `FORWARDED_ALLOW_IPS` decide whether `X-Forwarded-For` is trusted).
"""

from __future__ import annotations

from collections import OrderedDict, deque

from app.clock import Clock

MAX_ADDRESSES = 100_000


class FailureThrottle:
    def __init__(
        self,
        limit: int = 10,
        window: float = 60.0,
        *,
        clock: Clock,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.max_addresses = max_addresses
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, address: str, now: float) -> deque[float] | None:
        times = self._failures.get(address)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[address]
            return None
        return times

    def retry_after(self, address: str) -> float | None:
        """Seconds until `address` may try again; None when it may now."""
        if self.limit <= 0:
            return None
        now = self.clock.monotonic()
        times = self._recent(address, now)
        if times is None or len(times) < self.limit:
            return None
        return max(times[-self.limit] + self.window - now, 0.001)

    def failed(self, address: str) -> None:
        now = self.clock.monotonic()
        times = self._recent(address, now)
        if times is None:
            times = self._failures[address] = deque(maxlen=max(self.limit, 1))
        self._failures.move_to_end(address)
        times.append(now)
        while len(self._failures) > self.max_addresses:
            self._failures.popitem(last=False)
