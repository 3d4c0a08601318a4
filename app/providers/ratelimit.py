"""When a provider says to come back: `Retry-After`, `retry-after-ms`, and on a 429 without
them, the reset time of the rate limit that ran out.

OpenAI sends `x-ratelimit-{remaining,reset}-{requests,tokens}`, resets as Go-style
durations ("1s", "6m0s", "20ms"); Anthropic sends
`anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{remaining,reset}`,
resets as RFC 3339 times. Pure: header values and the current time in, seconds out.
"""

from __future__ import annotations

import email.utils
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

#: (remaining header, reset header, reset format) of every limit, token limits first:
#: a 429 with no limit at zero is a request asking for more tokens than remain.
_LIMITS = (
    ("x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", "duration"),
    ("x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "duration"),
    *(
        (f"anthropic-ratelimit-{f}-remaining", f"anthropic-ratelimit-{f}-reset", "time")
        for f in ("input-tokens", "output-tokens", "tokens", "requests")
    ),
)

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_SECONDS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


@dataclass(frozen=True, slots=True)
class RetryHint:
    """What the provider asked for: wait `seconds`, as `header` said."""

    seconds: float
    header: str


def parse_duration(text: str) -> float | None:
    """A Go duration string ("1s", "6m0s", "1h2m3.5s", "20ms", "0s") in seconds."""
    text = text.strip()
    if text == "0":
        return 0.0
    if not text:
        return None
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            return None
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    return total


def parse_rfc3339(text: str, now: float) -> float | None:
    """Seconds from `now` (Unix time) until an RFC 3339 time; 0 when it has passed."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - now)


def parse_retry_after(headers: Mapping[str, str], now: float) -> RetryHint | None:
    """`retry-after-ms`, else `Retry-After` (seconds or an HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return RetryHint(max(0.0, float(ms) / 1000.0), "retry-after-ms")
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return RetryHint(max(0.0, float(value)), "retry-after")
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return RetryHint(max(0.0, when.timestamp() - now), "retry-after")


def _remaining(headers: Mapping[str, str], name: str) -> float | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def rate_limit_reset(headers: Mapping[str, str], now: float) -> RetryHint | None:
    """When the exhausted rate limit resets. Every limit at zero remaining must reset, so
    the latest of their resets; when none is at zero (or no remaining count is given),
    the first limit with a reset, token limits first."""
    exhausted: list[RetryHint] = []
    known: list[RetryHint] = []
    for remaining_header, reset_header, form in _LIMITS:
        raw = headers.get(reset_header)
        if raw is None:
            continue
        seconds = parse_duration(raw) if form == "duration" else parse_rfc3339(raw, now)
        if seconds is None:
            continue
        hint = RetryHint(seconds, reset_header)
        known.append(hint)
        remaining = _remaining(headers, remaining_header)
        if remaining is not None and remaining <= 0:
            exhausted.append(hint)
    if exhausted:
        return max(exhausted, key=lambda h: h.seconds)
    return known[0] if known else None


def retry_hint(headers: Mapping[str, str], status: int, now: float) -> RetryHint | None:
    """The provider's own word on when to retry: `Retry-After` first; for a 429 without
    it, the reset time of the rate limit."""
    hint = parse_retry_after(headers, now)
    if hint is None and status == 429:
        hint = rate_limit_reset(headers, now)
    return hint


# --- what a 429 teaches -----------------------------------------------------------------

#: Headers naming a provider's own limits per minute (requests, tokens).
LIMIT_HEADERS = (
    ("x-ratelimit-limit-requests", "x-ratelimit-limit-tokens"),
    ("anthropic-ratelimit-requests-limit", "anthropic-ratelimit-tokens-limit"),
)
#: With no limit named and none configured, the first 429 seeds the rate at this share of
#: the calls the provider answered lately (then fading back up: additive increase).
SEED_SHARE = 0.8


def _positive(headers: Mapping[str, str], name: str) -> float | None:
    value = _remaining(headers, name)
    return value if value is not None and value > 0 else None


def named_limits(headers: Mapping[str, str]) -> tuple[float | None, float | None]:
    """The requests and tokens per minute the provider's headers name (None: not named)."""
    rpm = tpm = None
    for r_name, t_name in LIMIT_HEADERS:
        rpm = rpm or _positive(headers, r_name)
        tpm = tpm or _positive(headers, t_name)
    return rpm, tpm


def taught(named: float | None, configured: int | None) -> float | None:
    """The rate a 429 teaches a key of one kind: the provider's named limit when nothing
    is configured or it is lower than the configured one (a configured limit is an upper
    bound, a learned one only lowers it); None: the store steps the rate in force down."""
    if named is None:
        return None
    return named if configured is None or named < configured else None


def seed(answered: int, seconds: float) -> float | None:
    """With no limit named or configured: a first rate per minute from the calls the
    provider answered in the last `seconds` (None: it answered none, only the pause)."""
    if answered <= 0 or seconds <= 0:
        return None
    return answered / seconds * 60.0 * SEED_SHARE
