"""The overview's figures over a window (the dashboard draws them): usage per split key
and bucket, model calls' health per profile and model, and what was waiting over time,
from `RunReads.spend_of` and `RunReads.waiting_over`. Pure arithmetic on what those read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from app.store.fold import Sums, hour_of
from app.store.latency import Quantile, quantile
from app.store.samples import KEPT, Sample
from app.store.spend import Ledger

__all__ = [
    "KEPT",
    "SPLITS",
    "WINDOWS",
    "Health",
    "Ledger",
    "Quantile",
    "Sample",
    "Span",
    "Spend",
    "Sums",
    "Waiting",
    "health",
    "spend",
    "split_key",
    "waiting",
]

#: window -> (buckets, bucket length, the waiting chart's bucket length)
WINDOWS: dict[str, tuple[int, timedelta, timedelta]] = {
    "24h": (24, timedelta(hours=1), timedelta(minutes=10)),
    "7d": (7, timedelta(days=1), timedelta(hours=1)),
    "30d": (30, timedelta(days=1), timedelta(hours=6)),
}
SPLITS = ("model", "agent", "tenant")
NO_AGENT = "(no agent)"


@dataclass(frozen=True, slots=True)
class Span:
    """The window: bucket starts (oldest first) of one length, from `start` to now."""

    start: datetime
    step: timedelta
    starts: list[datetime]

    @classmethod
    def of(cls, window: str, at: datetime) -> Span:
        n, step, _ = WINDOWS[window]
        first = hour_of(at)
        if step >= timedelta(days=1):
            first = first.replace(hour=0)
        starts = [first - step * (n - 1 - i) for i in range(n)]
        return cls(starts[0], step, starts)

    def index(self, at: datetime) -> int | None:
        i = int((at - self.start) // self.step)
        return i if 0 <= i < len(self.starts) else None

    def label(self, at: datetime) -> str:
        return at.strftime("%H:00" if self.step < timedelta(days=1) else "%m-%d")


@dataclass
class Spend:
    keys: list[str]  # split keys, most costly first (then most tokens)
    totals: dict[str, Sums]
    cells: dict[tuple[str, int], Sums]  # (key, bucket index)
    total: Sums = field(default_factory=Sums)


def _add(into: Sums, sums: Sums) -> None:
    for name, value in sums.__dict__.items():
        if name == "cost_usd":
            if value is not None:
                into.cost_usd = (into.cost_usd or 0.0) + value
        else:
            setattr(into, name, getattr(into, name) + value)


def split_key(split: str, tenant: str, provider: str, model: str, agent: str) -> str:
    if split == "agent":
        return agent or NO_AGENT
    if split == "tenant":
        return tenant
    return f"{provider}:{model}"


def spend(ledger: Ledger, span: Span, split: str) -> Spend:
    """The ledger's usage per split key and bucket."""
    out = Spend([], {}, {})
    for (tenant, hour, provider, model, agent), sums in ledger.spend.items():
        i = span.index(hour)
        if i is None:
            continue
        key = split_key(split, tenant, provider, model, agent)
        _add(out.cells.setdefault((key, i), Sums()), sums)
        _add(out.totals.setdefault(key, Sums()), sums)
        _add(out.total, sums)
    out.keys = sorted(
        out.totals, key=lambda k: (-(out.totals[k].cost_usd or 0.0), -out.totals[k].total_tokens, k)
    )
    return out


@dataclass(frozen=True, slots=True)
class Health:
    """Model calls of one profile (provider) and model over the window."""

    provider: str
    model: str
    calls: int
    failed: int
    throttled: int
    p50: Quantile | None
    p95: Quantile | None

    @property
    def error_rate(self) -> float | None:
        return self.failed / self.calls if self.calls else None

    @property
    def throttle_rate(self) -> float | None:
        return self.throttled / self.calls if self.calls else None


def health(ledger: Ledger) -> list[Health]:
    """Per provider and model: calls, failures, 429s, latency percentiles; busiest first."""
    sums: dict[tuple[str, str], Sums] = {}
    for (_, _, provider, model, _), s in ledger.spend.items():
        _add(sums.setdefault((provider, model), Sums()), s)
    latency: dict[tuple[str, str], Counter[int]] = {}
    for (provider, model, bucket), n in ledger.latency.items():
        latency.setdefault((provider, model), Counter())[bucket] += n
    out = []
    for key in set(sums) | set(latency):
        s = sums.get(key, Sums())
        counts = latency.get(key, Counter())
        out.append(
            Health(
                key[0],
                key[1],
                s.calls,
                s.failed_calls,
                s.throttled_calls,
                quantile(counts, 0.5),
                quantile(counts, 0.95),
            )
        )
    return sorted(out, key=lambda h: (-h.calls, h.provider, h.model))


@dataclass(frozen=True, slots=True)
class Waiting:
    queued: list[float]
    running: list[float]
    suspended: list[float]
    oldest: list[float]  # seconds
    labels: list[str]
    sampled: int  # minutes with a sample in the window


def waiting(found: Iterable[Sample], start: datetime, step: timedelta, n: int) -> Waiting:
    """The samples summed over tenants per minute, then each bucket's largest figure."""
    minutes: dict[datetime, list[float]] = {}
    for s in found:
        m = minutes.setdefault(s.minute, [0.0, 0.0, 0.0, 0.0])
        m[0] += s.queued
        m[1] += s.running
        m[2] += s.suspended
        m[3] = max(m[3], s.oldest_suspended_s or 0.0)
    peaks = [[0.0] * n for _ in range(4)]
    for minute, figures in minutes.items():
        i = int((minute - start) // step)
        if 0 <= i < n:
            for j in range(4):
                peaks[j][i] = max(peaks[j][i], figures[j])
    day = step >= timedelta(days=1) or n * step > timedelta(days=2)
    fmt = "%m-%d %H:00" if day else "%H:%M"
    labels = [(start + step * i).strftime(fmt) for i in range(n)]
    return Waiting(peaks[0], peaks[1], peaks[2], peaks[3], labels, len(minutes))
