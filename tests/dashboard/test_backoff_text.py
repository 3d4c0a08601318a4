"""The dashboard's one-line account of a run waiting to retry a model call."""

from __future__ import annotations

from app.dashboard.present import waiting_reason_text


def test_a_backoff_says_when_which_attempt_and_why() -> None:
    reason = {
        "type": "backoff",
        "until": "2026-01-02T03:04:05Z",
        "attempt": 2,
        "max_attempts": 8,
        "status": 429,
        "reason": "rate_limit_reset",
        "header": "x-ratelimit-reset-tokens",
    }
    assert waiting_reason_text(reason) == (
        "retry at 2026-01-02T03:04:05Z, attempt 2 of 8 failed (HTTP 429): "
        "rate limit resets (x-ratelimit-reset-tokens)"
    )
    connection = {**reason, "status": None, "reason": "backoff", "header": None}
    assert waiting_reason_text(connection) == (
        "retry at 2026-01-02T03:04:05Z, attempt 2 of 8 failed: exponential backoff"
    )
    told = {**reason, "reason": "retry_after", "header": "retry-after-ms"}
    assert waiting_reason_text(told).endswith("(HTTP 429): the provider's retry-after-ms")


def test_a_backoff_stored_before_it_said_why() -> None:
    old = {"type": "backoff", "until": "2026-01-02T03:04:05+00:00", "attempt": 1, "error": {}}
    assert waiting_reason_text(old) == "retry at 2026-01-02T03:04:05+00:00, attempt 1 failed"
