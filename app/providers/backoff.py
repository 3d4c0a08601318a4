"""Retry delays: exponential backoff with full jitter, honouring `Retry-After`.

Pure: the random source is injected, elapsed time is passed in. The worker asks the policy
for the next delay after each retryable `ProviderError`; `None` means the run fails with
that error.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from app.providers.base import ProviderError

#: Returns a float uniformly in [0, 1).
RandomSource = Callable[[], float]


def backoff_delay(
    attempt: int,
    *,
    base: float = 0.5,
    cap: float = 30.0,
    retry_after: float | None = None,
    rand: RandomSource = random.random,
) -> float:
    """Delay before retry number `attempt` (1 = the first retry).

    Full jitter (AWS architecture blog): uniform in [0, min(cap, base * 2**(attempt-1))).
    A provider's `retry_after` is a floor: the delay is never shorter than the server asked.
    """
    if attempt < 1:
        raise ValueError("attempt counts from 1")
    ceiling = min(cap, base * 2.0 ** min(attempt - 1, 62))
    delay = rand() * ceiling
    if retry_after is not None and retry_after > delay:
        delay = retry_after
    return delay


@dataclass(frozen=True, slots=True)
class BackoffPolicy:
    """Bounds on retrying one model call.

    `max_attempts` counts every attempt including the first (so `max_attempts - 1`
    retries); `max_total_seconds` bounds the time spent from the first attempt to the
    start of the last retry (waits included): a delay that would cross it ends the run.
    """

    max_attempts: int = 5
    max_total_seconds: float = 120.0
    base_seconds: float = 0.5
    cap_seconds: float = 30.0

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
        )
        if elapsed_seconds + delay > self.max_total_seconds:
            return None
        return delay

    def delay_for(
        self,
        error: ProviderError,
        attempts_made: int,
        elapsed_seconds: float,
        *,
        rand: RandomSource = random.random,
    ) -> float | None:
        """`next_delay` for a failed call: None at once for a non-retryable error."""
        if not error.retryable:
            return None
        return self.next_delay(
            attempts_made, elapsed_seconds, retry_after=error.retry_after, rand=rand
        )
