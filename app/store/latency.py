"""Latency histograms: a model call's latency falls in one of a fixed set of buckets,
eight per doubling (each about 9 % wide), so the rollup `latency_hourly` keeps a few rows
per hour and model and any window's percentiles are read from them, to within a bucket.

Bucket `b` holds latencies in [2^(b/8), 2^((b+1)/8)) milliseconds; bucket 0 also holds
everything under 1 ms and the last bucket everything over about 4.6 hours.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

PER_DOUBLING = 8
LAST = 24 * PER_DOUBLING - 1  # (2^24 ms: 4.6 hours)
#: Added before the floor, so a latency on a bucket's edge (a power of two, exact in
#: binary) lands in the bucket it opens however the logarithm rounds (here or in SQL).
EPSILON = 1e-9


def bucket_of(latency_ms: float) -> int:
    """The bucket a latency falls in."""
    if not latency_ms > 1.0:  # (NaN too)
        return 0
    return min(LAST, math.floor(PER_DOUBLING * math.log2(latency_ms) + EPSILON))


def lower(bucket: int) -> float:
    return 0.0 if bucket == 0 else 2 ** (bucket / PER_DOUBLING)


def upper(bucket: int) -> float:
    return math.inf if bucket >= LAST else 2 ** ((bucket + 1) / PER_DOUBLING)


@dataclass(frozen=True, slots=True)
class Quantile:
    """The bucket that holds a quantile: the value is in [low, high) milliseconds."""

    low: float
    high: float


def quantile(counts: Mapping[int, int], q: float) -> Quantile | None:
    """The bucket holding the `q` quantile (nearest rank: the ceil(q·n)-th smallest
    latency) of a histogram; None when it holds no call."""
    n = sum(counts.values())
    if n <= 0:
        return None
    rank = max(1, math.ceil(q * n))
    seen = 0
    for bucket in sorted(counts):
        seen += counts[bucket]
        if seen >= rank:
            return Quantile(lower(bucket), upper(bucket))
    raise AssertionError("unreachable: the ranks add up to n")
