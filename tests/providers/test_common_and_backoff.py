"""Shared helpers (arguments, error mapping) and the backoff policy. (Retry-After and the
rate-limit headers: test_ratelimit.py.)"""

from __future__ import annotations

import itertools

import pytest

from app.providers.backoff import BackoffPolicy, backoff_delay
from app.providers.base import ProviderError
from app.providers.common import dump_arguments, error_from_response, parse_arguments
from app.providers.registry import provider_from_settings

NOW = 1_700_000_000.0


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ('{"x": 1}', {"x": 1}),
        ("", {}),
        ("   ", {}),
        (None, {}),
        ("[1, 2]", [1, 2]),
        ('{"x": ', '{"x": '),
        ("not json", "not json"),
    ],
)
def test_parse_arguments(raw: str | None, value: object) -> None:
    assert parse_arguments(raw) == value


def test_dump_arguments() -> None:
    assert dump_arguments({"x": 1, "s": "é"}) == '{"x":1,"s":"é"}'
    assert dump_arguments('{"x": ') == '{"x": '
    assert dump_arguments(None) == "{}"


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (422, False), (408, True),
     (409, True), (429, True), (500, True), (502, True), (503, True), (529, True)],
)  # fmt: skip
def test_status_mapping(status: int, retryable: bool) -> None:
    body = b'{"error": {"message": "nope", "type": "x"}}'
    err = error_from_response("openai", status, body, {"retry-after": "3"}, NOW)
    assert err.status == status
    assert err.retryable is retryable
    assert err.message == "nope"
    assert err.retry_after == (3.0 if retryable else None)
    assert err.to_dict() == {
        "provider": "openai",
        "status": status,
        "message": "nope",
        "retryable": retryable,
    }


def test_context_length_errors_are_never_retryable() -> None:
    openai_body = (
        b'{"error": {"message": "This model\'s maximum context length is 128000 tokens.",'
        b' "type": "invalid_request_error", "code": "context_length_exceeded"}}'
    )
    assert error_from_response("openai", 400, openai_body, {}, NOW).retryable is False
    anthropic_body = (
        b'{"type": "error", "error": {"type": "invalid_request_error",'
        b' "message": "prompt is too long: 210000 tokens > 200000 maximum"}}'
    )
    err = error_from_response("anthropic", 400, anthropic_body, {}, NOW)
    assert err.retryable is False
    assert err.message == "prompt is too long: 210000 tokens > 200000 maximum"
    # even behind a proxy that answers 5xx
    assert error_from_response("openai", 500, openai_body, {}, NOW).retryable is False


def test_non_json_error_body_keeps_the_text() -> None:
    err = error_from_response("openai", 502, b"<html>Bad Gateway</html>", {}, NOW)
    assert err.message == "<html>Bad Gateway</html>"
    assert err.retryable is True
    assert error_from_response("openai", 503, b"", {}, NOW).message == "HTTP 503"


# --- backoff -------------------------------------------------------------------------------


def test_full_jitter_bounds() -> None:
    assert backoff_delay(1, base=1.0, rand=lambda: 0.0) == 0.0
    assert backoff_delay(1, base=1.0, rand=lambda: 0.999) == pytest.approx(0.999)
    assert backoff_delay(4, base=1.0, rand=lambda: 0.5) == pytest.approx(4.0)  # 0.5 * 8
    assert backoff_delay(50, base=1.0, cap=30.0, rand=lambda: 0.5) == 15.0
    with pytest.raises(ValueError):
        backoff_delay(0)


def test_retry_after_is_a_floor() -> None:
    assert backoff_delay(1, base=1.0, retry_after=5.0, rand=lambda: 0.5) == 5.0
    assert backoff_delay(5, base=1.0, retry_after=0.1, rand=lambda: 0.5) == 8.0


def test_jitter_uses_the_injected_source() -> None:
    values = itertools.cycle([0.1, 0.9])
    delays = [backoff_delay(3, base=1.0, rand=lambda: next(values)) for _ in range(2)]
    assert delays == [pytest.approx(0.4), pytest.approx(3.6)]


def test_equal_jitter_bounds() -> None:
    """Model calls: uniform in [c/2, c), so every wait has a floor."""
    assert backoff_delay(1, base=1.0, rand=lambda: 0.0, jitter="equal") == 0.5
    assert backoff_delay(3, base=1.0, rand=lambda: 0.999, jitter="equal") == pytest.approx(3.998)
    assert backoff_delay(50, base=1.0, cap=60.0, rand=lambda: 0.0, jitter="equal") == 30.0


def test_policy_bounded_by_attempts_and_total_time() -> None:
    policy = BackoffPolicy(max_attempts=3, max_total_seconds=10.0, base_seconds=1.0)
    half = lambda: 0.5  # noqa: E731
    assert policy.next_delay(1, 0.0, rand=half) == 0.75  # [0.5, 1)
    assert policy.next_delay(2, 0.75, rand=half) == 1.5  # [1, 2)
    assert policy.next_delay(3, 2.25, rand=half) is None  # attempts exhausted
    assert policy.next_delay(1, 9.8, rand=half) is None  # would cross the time budget
    assert policy.next_delay(1, 0.0, retry_after=11.0, rand=half) is None
    assert policy.next_delay(1, 0.0, retry_after=4.0, rand=half) == 4.0


def test_policy_for_errors() -> None:
    policy = BackoffPolicy()
    retryable = ProviderError("slow down", status=429, retryable=True, retry_after=2.0)
    assert policy.delay_for(retryable, 1, 0.0, rand=lambda: 0.0) == 2.0
    fatal = ProviderError("bad key", status=401)
    assert policy.delay_for(fatal, 1, 0.0) is None


# --- registry ------------------------------------------------------------------------------


def test_registry_builds_from_settings_only() -> None:
    chat = provider_from_settings(
        "openai", openai_api_key="sk-1", openai_base_url="http://127.0.0.1:9/v1/", timeout=5
    )
    assert chat.url == "http://127.0.0.1:9/v1/chat/completions"
    assert chat.timeout == 5
    responses = provider_from_settings("openai_responses", openai_api_key="sk-1")
    assert responses.url == "https://api.openai.com/v1/responses"
    claude = provider_from_settings("anthropic", anthropic_api_key="k")
    assert claude.url == "https://api.anthropic.com/v1/messages"
    assert claude.auth_headers() == {"anthropic-version": "2023-06-01", "x-api-key": "k"}
    assert chat.auth_headers() == {"authorization": "Bearer sk-1"}
    assert provider_from_settings("openai").auth_headers() == {}
    with pytest.raises(ValueError, match="unknown provider 'scripted'"):
        provider_from_settings("scripted")
