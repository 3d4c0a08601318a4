"""Cron expressions in a time zone, behind one small interface (`parse`, `Cron.after`,
`Cron.between`). Parsing and DST handling are cronsim's (Debian cron's rules: a fixed
time that falls in a skipped hour fires once, right after the jump; one in a repeated
hour fires once, at its first occurrence; a wildcard field fires in both); zones are
`zoneinfo`'s. Every instant in and out is aware, in UTC."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

#: The common `@` forms, as 5-field expressions (`@reboot` has no time: refused).
NAMED = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}


class CronError(ValueError):
    """A refused expression or zone; the message names the field (`cron:`, `timezone:`)."""


def zone(name: str) -> ZoneInfo:
    """The IANA zone `name`; a `CronError` naming the field for any other string."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(
            f"timezone: unknown time zone {name!r} (an IANA name, e.g. 'Europe/Berlin')"
        ) from None


@dataclass(frozen=True)
class Cron:
    """A checked expression in a zone."""

    expression: str  # as given (an `@` form stays one)
    fields: str  # the 5-field form cronsim reads
    tz: ZoneInfo

    def after(self, instant: datetime) -> datetime | None:
        """The first time strictly after `instant` (UTC), or None when there is none."""
        return next(self.between(instant, None), None)

    def between(self, after: datetime, until: datetime | None) -> Iterator[datetime]:
        """The times strictly after `after` and at most `until` (None: no end), in order,
        in UTC. (cronsim, started inside a repeated hour's second pass, may answer a time
        of its first pass, before the start: such times are dropped.)"""
        local = after.astimezone(self.tz)
        try:
            times = CronSim(self.fields, local)
            for t in times:
                out = t.astimezone(UTC)
                if out <= after:
                    continue
                if until is not None and out > until:
                    return
                yield out
        except (StopIteration, CronSimError):  # (no more times: past cronsim's horizon)
            return

    def local(self, instant: datetime) -> datetime:
        """`instant` in the schedule's zone."""
        return instant.astimezone(self.tz)


def parse(expression: str, timezone: str = "UTC") -> Cron:
    """A 5-field cron expression (minute hour day-of-month month day-of-week; `L` for a
    month's last day, names of months and days) or an `@` form, in `timezone`; a
    `CronError` naming the field that is wrong."""
    tz = zone(timezone)
    text = " ".join(expression.split())
    fields = NAMED.get(text.lower(), text)
    if text.startswith("@") and fields == text:
        raise CronError(
            f"cron: {expression!r} is not one of the @ forms ({', '.join(sorted(NAMED))})"
        )
    if len(fields.split(" ")) != 5:
        raise CronError(
            f"cron: {expression!r} has {len(fields.split())} fields; a schedule takes 5 "
            "(minute hour day-of-month month day-of-week) or an @ form such as @daily"
        )
    try:
        probe = CronSim(fields, datetime(2000, 1, 1, tzinfo=tz))
        next(probe)  # (an expression that can never fire, e.g. 0 0 30 2 *, fails here)
    except (CronSimError, StopIteration) as exc:
        raise CronError(
            f"cron: {expression!r} is not a valid expression ({exc or 'never fires'})"
        ) from None
    return Cron(expression, fields, tz)


def tick_offset(seed: str, jitter_seconds: int) -> timedelta:
    """A tick's jitter: a delay in [0, jitter_seconds) that is the same for every worker
    (derived from the schedule and the tick, not drawn)."""
    if jitter_seconds <= 0:
        return timedelta(0)
    digest = int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")
    return timedelta(milliseconds=digest % (jitter_seconds * 1000))
