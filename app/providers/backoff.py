"""Retry delays: exponential backoff with jitter, never shorter than the provider asked.

Pure: the random source is injected, elapsed time is passed in. The worker asks the policy
for the next delay after each retryable `ProviderError`; `None` means the run fails with
that error.

Model calls use *equal jitter*: retry `k` waits uniformly in [c/2, c) with
c = min(cap, base * 2**(k-1)), so the schedule has a floor as well as a ceiling. With the
defaults (8 attempts, base 1 s, cap 60 s) the seven waits' ceilings are 1, 2, 4, 8, 16, 32
and 60 s: the cumulative wait before the last attempt is at least 61.5 s whatever the
random draws (it outlasts a one-minute rate-limit window even when the provider gives no
`Retry-After`), 92.25 s on average and at most 123 s, inside the 300 s budget. Webhook
deliveries keep *full jitter* (uniform in [0, c)).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from app.providers.base import ProviderError

#: Returns a float uniformly in [0, 1).
RandomSource = Callable[[], float]

Reason = Literal["retry_after", "rate_limit_reset", "backoff"]


def backoff_delay(
    attempt: int,
    *,
    base: float = 0.5,
    cap: float = 30.0,
    retry_after: float | None = None,
    rand: RandomSource = random.random,
    jitter: Literal["full", "equal"] = "full",
) -> float:
    """Delay before retry number `attempt` (1 = the first retry).

    Full jitter (AWS architecture blog): uniform in [0, c), c = min(cap, base * 2**(k-1));
    equal jitter: uniform in [c/2, c). A provider's `retry_after` is a floor: the delay is
    never shorter than the server asked.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    ceiling = min(cap, base * 2.0 ** min(attempt - 1, 62))
    floor = ceiling / 2 if jitter == "equal" else 0.0
    delay = floor + rand() * (ceiling - floor)
    if retry_after is not None and retry_after > delay:
        delay = retry_after
    return delay


@dataclass(frozen=True, slots=True)
class Delay:
    """A scheduled retry: how long, and why that long. `reason` is the provider's
    `Retry-After`, the reset of its exhausted rate limit (`header` names which), or our
    own exponential backoff (also when the provider's hint was shorter than it)."""

    seconds: float
    reason: Reason
    hint_seconds: float | None = None
    header: str | None = None


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Bounds on retrying one model call.

    `max_attempts` counts every attempt including the first (so `max_attempts - 1`
    retries); `max_total_seconds` bounds the time spent from the first attempt to the
    start of the last retry (waits included): a delay that would cross it ends the run.
    """

    max_attempts: int = 8
    max_total_seconds: float = 300.0
    base_seconds: float = 1.0
    cap_seconds: float = 60.0

    def ceiling(self, attempt: int) -> float:
        """The upper bound of the wait before retry number `attempt`."""
        return min(self.cap_seconds, self.base_seconds * 2.0 ** min(attempt - 1, 62))

    def total_wait_bounds(self) -> tuple[float, float]:
        """(least, most) cumulative wait over every retry, without provider hints."""
        ceilings = [self.ceiling(k) for k in range(1, self.max_attempts)]
        return sum(c / 2 for c in ceilings), sum(ceilings)

    def next_delay(
        self,
        attempts_made: int,
        elapsed_seconds: float,
        *,
        retry_after: float | None = None,
        rand: RandomSource = random.random,
    ) -> float | None:
        """Seconds to wait before attempt `attempts_made + 1`, or None to give up."""
        if attempts_made >= self.max_attempts:
            return None
        delay = backoff_delay(
            attempts_made,
            base=self.base_seconds,
            cap=self.cap_seconds,
            retry_after=retry_after,
            rand=rand,
            jitter="equal",
        )
        if elapsed_seconds + delay > self.max_total_seconds:
            return None
        return delay

    def schedule(
        self,
        error: ProviderError,
        attempts_made: int,
        elapsed_seconds: float,
        *,
        rand: RandomSource = random.random,
    ) -> Delay | None:
        """The retry after a failed call, with its reason; None to give up (not
        retryable, attempts spent, or the wait would cross the time budget)."""
        if not error.retryable:
            return None
        hint = error.retry_after
        seconds = self.next_delay(attempts_made, elapsed_seconds, retry_after=hint, rand=rand)
        if seconds is None:
            return None
        reason: Reason = "backoff"
        if hint is not None and seconds == hint:
            header = error.retry_header or "retry-after"
            reason = "retry_after" if header.startswith("retry-after") else "rate_limit_reset"
        return Delay(seconds, reason, hint, error.retry_header)

    def delay_for(
        self,
        error: ProviderError,
        attempts_made: int,
        elapsed_seconds: float,
        *,
        rand: RandomSource = random.random,
    ) -> float | None:
        """`schedule`, in seconds only."""
        delay = self.schedule(error, attempts_made, elapsed_seconds, rand=rand)
        return delay.seconds if delay is not None else None
