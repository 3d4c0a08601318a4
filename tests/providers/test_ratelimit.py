"""When to retry: every header form the providers use, and the default schedule's proof
that it outlasts a one-minute rate-limit window."""

from __future__ import annotations

import email.utils
import itertools
import random
from datetime import UTC, datetime

import pytest

from app.providers.backoff import BackoffPolicy, RandomSource
from app.providers.base import ProviderError
from app.providers.common import error_from_response
from app.providers.ratelimit import (
    RetryHint,
    parse_duration,
    parse_retry_after,
    parse_rfc3339,
    rate_limit_reset,
    retry_hint,
)
from app.settings import Settings

NOW = 1_700_000_000.0


def at(seconds_from_now: float) -> str:
    return datetime.fromtimestamp(NOW + seconds_from_now, UTC).isoformat().replace("+00:00", "Z")


# --- header formats --------------------------------------------------------------------------


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "7"}, NOW) == RetryHint(7.0, "retry-after")
    assert parse_retry_after({"retry-after": " 1.5 "}, NOW) == RetryHint(1.5, "retry-after")
    date = email.utils.formatdate(NOW + 30, usegmt=True)
    hint = parse_retry_after({"retry-after": date}, NOW)
    assert hint is not None and hint.seconds == pytest.approx(30.0)
    past = email.utils.formatdate(NOW - 30, usegmt=True)
    assert parse_retry_after({"retry-after": past}, NOW) == RetryHint(0.0, "retry-after")
    both = {"retry-after-ms": "250", "retry-after": "9"}
    assert parse_retry_after(both, NOW) == RetryHint(0.25, "retry-after-ms")
    bad_ms = {"retry-after-ms": "soon", "retry-after": "9"}
    assert parse_retry_after(bad_ms, NOW) == RetryHint(9.0, "retry-after")
    assert parse_retry_after({"retry-after": "soon"}, NOW) is None
    assert parse_retry_after({}, NOW) is None


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("0s", 0.0),
        ("0", 0.0),
        ("1h2m3.5s", 3723.5),
        ("1.5s", 1.5),
        ("7.66s", 7.66),
        ("59m59.999s", 3599.999),
        ("250us", 0.00025),
        ("250µs", 0.00025),
        ("100ns", 1e-7),
        (".5s", 0.5),
    ],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "s", "1", "1x", "1s2", "-1s", "soon", "1 s"])
def test_malformed_durations_are_none(text: str) -> None:
    assert parse_duration(text) is None


def test_rfc3339_times() -> None:
    assert parse_rfc3339(at(42), NOW) == pytest.approx(42.0)
    assert parse_rfc3339("2023-11-14T22:13:20+00:00", NOW) == pytest.approx(0.0)  # NOW
    assert parse_rfc3339("2023-11-14T23:13:20+01:00", NOW) == pytest.approx(0.0)
    assert parse_rfc3339("2023-11-14T22:14:20.500Z", NOW) == pytest.approx(60.5)
    assert parse_rfc3339(at(-5), NOW) == 0.0  # already reset
    assert parse_rfc3339("2023-11-14T22:14:20", NOW) is None  # no zone: ambiguous
    assert parse_rfc3339("tomorrow", NOW) is None


# --- which limit ---------------------------------------------------------------------------


def test_openai_the_exhausted_limit_decides() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "6m0s",
        "x-ratelimit-remaining-tokens": "15000",
        "x-ratelimit-reset-tokens": "20ms",
    }
    assert rate_limit_reset(headers, NOW) == RetryHint(360.0, "x-ratelimit-reset-requests")
    headers |= {"x-ratelimit-remaining-requests": "10", "x-ratelimit-remaining-tokens": "0"}
    assert rate_limit_reset(headers, NOW) == RetryHint(0.02, "x-ratelimit-reset-tokens")


def test_both_limits_exhausted_waits_for_the_later_reset() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "1s",
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "45s",
    }
    assert rate_limit_reset(headers, NOW) == RetryHint(45.0, "x-ratelimit-reset-tokens")


def test_no_limit_at_zero_means_the_request_wants_more_tokens_than_remain() -> None:
    headers = {
        "x-ratelimit-remaining-requests": "499",
        "x-ratelimit-reset-requests": "120ms",
        "x-ratelimit-remaining-tokens": "900",
        "x-ratelimit-reset-tokens": "8.5s",
    }
    assert rate_limit_reset(headers, NOW) == RetryHint(8.5, "x-ratelimit-reset-tokens")
    only_requests = {"x-ratelimit-reset-requests": "2s"}
    assert rate_limit_reset(only_requests, NOW) == RetryHint(2.0, "x-ratelimit-reset-requests")


def test_anthropic_reset_times() -> None:
    headers = {
        "anthropic-ratelimit-requests-remaining": "40",
        "anthropic-ratelimit-requests-reset": at(1),
        "anthropic-ratelimit-tokens-remaining": "0",
        "anthropic-ratelimit-tokens-reset": at(30),
        "anthropic-ratelimit-input-tokens-remaining": "0",
        "anthropic-ratelimit-input-tokens-reset": at(30),
        "anthropic-ratelimit-output-tokens-remaining": "8000",
        "anthropic-ratelimit-output-tokens-reset": at(2),
    }
    hint = rate_limit_reset(headers, NOW)
    assert hint is not None and hint.seconds == pytest.approx(30.0)
    assert hint.header == "anthropic-ratelimit-input-tokens-reset"
    headers |= {
        "anthropic-ratelimit-output-tokens-remaining": "0",
        "anthropic-ratelimit-output-tokens-reset": at(50),
    }
    hint = rate_limit_reset(headers, NOW)
    assert hint is not None and hint.header == "anthropic-ratelimit-output-tokens-reset"
    assert hint.seconds == pytest.approx(50.0)


def test_unparsable_resets_are_ignored() -> None:
    headers = {
        "x-ratelimit-remaining-tokens": "0",
        "x-ratelimit-reset-tokens": "later",
        "anthropic-ratelimit-requests-reset": "not a time",
    }
    assert rate_limit_reset(headers, NOW) is None
    assert rate_limit_reset({}, NOW) is None


def test_retry_after_wins_and_resets_apply_only_to_429() -> None:
    limits = {"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "30s"}
    assert retry_hint({**limits, "retry-after": "2"}, 429, NOW) == RetryHint(2.0, "retry-after")
    assert retry_hint(limits, 429, NOW) == RetryHint(30.0, "x-ratelimit-reset-tokens")
    assert retry_hint(limits, 503, NOW) is None
    assert retry_hint({"retry-after": "4"}, 503, NOW) == RetryHint(4.0, "retry-after")


def test_error_from_response_carries_the_hint_and_its_header() -> None:
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1m30s"}
    err = error_from_response("openai", 429, b'{"error": {"message": "slow"}}', headers, NOW)
    assert (err.retryable, err.retry_after, err.retry_header) == (
        True,
        90.0,
        "x-ratelimit-reset-requests",
    )
    fatal = error_from_response("openai", 400, b"{}", {"retry-after": "3"}, NOW)
    assert (fatal.retry_after, fatal.retry_header) == (None, None)


# --- the default schedule --------------------------------------------------------------------


def default_policy() -> BackoffPolicy:
    s = Settings()
    return BackoffPolicy(
        max_attempts=s.provider_max_attempts,
        max_total_seconds=s.provider_max_backoff_seconds,
        base_seconds=s.provider_backoff_base_seconds,
        cap_seconds=s.provider_backoff_cap_seconds,
    )


def total_wait(policy: BackoffPolicy, rand: RandomSource) -> float:
    """Drive the policy through a run of retryable failures with no provider hint, as
    the worker does; the cumulative wait before the last attempt."""
    error = ProviderError("rate limited", status=429, retryable=True)
    waited, attempt = 0.0, 1
    while (delay := policy.schedule(error, attempt, waited, rand=rand)) is not None:
        assert delay.reason == "backoff"
        waited += delay.seconds
        attempt += 1
    assert attempt == policy.max_attempts  # attempts ran out, not the time budget
    return waited


def test_the_default_schedule_outlasts_a_one_minute_window_whatever_the_draws() -> None:
    policy = default_policy()
    assert (policy.max_attempts, policy.base_seconds, policy.cap_seconds) == (8, 1.0, 60.0)
    assert [policy.ceiling(k) for k in range(1, 8)] == [1, 2, 4, 8, 16, 32, 60]
    least, most = policy.total_wait_bounds()
    assert (least, most) == (61.5, 123.0)
    # the worst case: every draw 0 (the shortest waits), and every draw just below 1
    assert total_wait(policy, lambda: 0.0) == 61.5 > 60.0
    assert total_wait(policy, lambda: 1.0 - 1e-12) == pytest.approx(123.0)
    assert most < policy.max_total_seconds  # the time budget never cuts the schedule short
    # the expectation (draws uniform): 92.25 s; a seeded sample of 2000 runs agrees
    rng = random.Random(12)
    totals = [total_wait(policy, rng.random) for _ in range(2000)]
    assert min(totals) > 60.0
    assert sum(totals) / len(totals) == pytest.approx((least + most) / 2, rel=0.02)


def test_the_old_schedule_did_not() -> None:
    """For contrast: 5 attempts, 0.5 s base, full jitter spent 4 waits of at most 7.5 s."""
    old = BackoffPolicy(max_attempts=5, base_seconds=0.5, cap_seconds=30.0)
    assert sum(old.ceiling(k) for k in range(1, 5)) == 7.5


def test_a_provider_hint_is_a_floor_and_named() -> None:
    policy = default_policy()
    draws = itertools.repeat(0.0)
    long_hint = ProviderError(
        "x", status=429, retryable=True, retry_after=20.0, retry_header="x-ratelimit-reset-tokens"
    )
    delay = policy.schedule(long_hint, 1, 0.0, rand=lambda: next(draws))
    assert delay is not None
    assert (delay.seconds, delay.reason, delay.hint_seconds, delay.header) == (
        20.0,
        "rate_limit_reset",
        20.0,
        "x-ratelimit-reset-tokens",
    )
    retry_after = ProviderError("x", status=503, retryable=True, retry_after=5.0)
    delay = policy.schedule(retry_after, 1, 0.0, rand=lambda: 0.0)
    assert delay is not None and (delay.seconds, delay.reason) == (5.0, "retry_after")
    # a hint shorter than the backoff's floor: the backoff decides, the hint is kept
    short = ProviderError("x", status=429, retryable=True, retry_after=0.02, retry_header="h")
    delay = policy.schedule(short, 5, 0.0, rand=lambda: 0.0)
    assert delay is not None and (delay.seconds, delay.reason) == (8.0, "backoff")
    assert delay.hint_seconds == 0.02
    # a hint beyond the time budget ends the run instead of waiting
    far = ProviderError("x", status=429, retryable=True, retry_after=3600.0)
    assert policy.schedule(far, 1, 0.0) is None
