"""Logging: the redaction step and the process configuration (app.logs)."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator
from types import SimpleNamespace

import pytest
import structlog

from app.logs import REDACTED, Redactor, configure_logging, settings_secrets


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    """Each test configures the process's logging; put the defaults back after it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


SETTINGS = SimpleNamespace(
    api_key_list=["plainkey0001", "plainkey0002"],
    webhook_secret="whsec_dGhpcy1pcy1hLXNlY3JldA==",
    openai_api_key="sk-proj-abcdefghijklmnop",
    anthropic_api_key="sk-ant-api03-zyxwvutsrqpo",
    database_url="postgresql+psycopg://agent:p%40ss-w0rd@db.internal:5432/agentrun",
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("connect to postgresql://u:hunter22@h:5432/d failed", "hunter22"),
        ("dsn host=h user=u password=hunter22 dbname=d", "hunter22"),
        ("{'password': 'hunter22'}", "hunter22"),
        ("headers Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
        ("secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"),
        ("key sk-ant-api03-ABCDEFGH12345", "ABCDEFGH12345"),
        ("POST http://h/v1/callbacks/Zm9vYmFyYmF6cXV4_-0/tool-results", "Zm9vYmFyYmF6cXV4_-0"),
        ("GET /hook?token=t0k3nvalue&x=1", "t0k3nvalue"),
        ("api_key=abcd1234", "abcd1234"),
        ("GET /v1/runs/r/events?access_token=arb_eyJ0Ijoi.Sig-_0&after=2", "eyJ0Ijoi.Sig-_0"),
        ("token arb_eyJ0IjoiZGVmYXVsdCJ9.aBc-d_E refused", "eyJ0IjoiZGVmYXVsdCJ9.aBc-d_E"),
        (
            "key ark_0123456789abcdef_c2VjcmV0LXNlY3JldC1zZWNyZXQ-c2VjcmV0_x0",
            "c2VjcmV0LXNlY3JldC1zZWNyZXQ",
        ),
    ],
)
def test_secrets_are_recognised_by_their_shape(text: str, secret: str) -> None:
    scrubbed = Redactor().text(text)
    assert secret not in scrubbed
    assert REDACTED in scrubbed


def test_configured_secrets_are_scrubbed_by_value_whatever_their_shape() -> None:
    redactor = Redactor(settings_secrets(SETTINGS))
    for value in ("plainkey0001", "plainkey0002", "p@ss-w0rd", "p%40ss-w0rd"):
        assert value not in redactor.text(f"value {value} in a message")
    assert "dGhpcy1pcy1hLXNlY3JldA" not in redactor.text(str(SETTINGS.webhook_secret))


def test_ordinary_text_is_left_alone() -> None:
    text = "run run_abc suspended for 2 tool calls; tokens used: 120"
    assert Redactor(settings_secrets(SETTINGS)).text(text) == text


def test_event_fields_named_like_secrets_and_nested_values_are_scrubbed() -> None:
    event = {
        "event": "x",
        "password": "anything",
        "callback_token": "abc",
        "context": {"api_key": "zzz", "urls": ["postgresql://u:pw1234@h/d"]},
        "count": 3,
    }
    out = Redactor()(None, "info", event)
    assert out["password"] == REDACTED and out["callback_token"] == REDACTED
    assert out["context"]["api_key"] == REDACTED
    assert "pw1234" not in out["context"]["urls"][0]
    assert out["count"] == 3


def _boom() -> None:
    database_url = "postgresql://u:local-only-secret@h/d"  # a local, never in the message
    raise RuntimeError(f"cannot reach {database_url.split('@')[1]}")


@pytest.mark.parametrize("as_json", [True, False])
def test_tracebacks_are_plain_without_locals_and_redacted(as_json: bool) -> None:
    stream = io.StringIO()
    configure_logging(SETTINGS, stream=stream, json=as_json)
    try:
        _boom()
    except RuntimeError:
        structlog.get_logger("t").exception("failed", dsn=SETTINGS.database_url)
    try:
        raise ValueError("Bearer plainkey0001 rejected")
    except ValueError:
        logging.getLogger("uvicorn.error").exception("stdlib failed")
    out = stream.getvalue()
    assert "Traceback" in out and "RuntimeError" in out and "ValueError" in out
    assert "local-only-secret" not in out  # locals are never rendered
    for secret in ("p@ss-w0rd", "p%40ss-w0rd", "plainkey0001"):
        assert secret not in out
    lines = [line for line in out.splitlines() if line.strip()]
    if as_json:
        records = [json.loads(line) for line in lines if line.startswith("{")]
        assert {r["event"] for r in records} == {"failed", "stdlib failed"}
        assert all("timestamp" in r and "level" in r for r in records)
    else:
        assert not any(line.startswith("{") for line in lines)


def test_configuring_twice_keeps_one_handler() -> None:
    configure_logging(SETTINGS, stream=io.StringIO(), json=True)
    configure_logging(SETTINGS, stream=io.StringIO(), json=True)
    ours = [h for h in logging.getLogger().handlers if getattr(h, "_agentrun", False)]
    assert len(ours) == 1


def test_an_access_log_line_keeps_the_path_but_not_a_browser_token() -> None:
    """uvicorn's access log (off in `agentrun api`, on where a deployment turns it on)
    writes the query string: a browser token in `?access_token=` is scrubbed there."""
    stream = io.StringIO()
    configure_logging(SETTINGS, stream=stream, json=True)
    token = "arb_eyJ0IjoiZGVmYXVsdCIsInIiOiJydW5feCJ9.c2lnbmF0dXJl-_x"
    path = f"/v1/runs/run_x/events?after=3&access_token={token}"
    access = logging.getLogger("uvicorn.access")
    # As uvicorn leaves it for an access log (an earlier in-process server may have set
    # it to warning, or disabled it).
    level, disabled = access.level, access.disabled
    access.setLevel(logging.INFO)
    access.disabled = False
    try:
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5000", "GET", path, "1.1", 200)
        access.info('%s - "%s %s HTTP/%s" %d', "127.0.0.1:5", "GET", f"/x?t={token}", "1.1", 401)
    finally:
        access.setLevel(level)
        access.disabled = disabled
    out = stream.getvalue()
    assert "/v1/runs/run_x/events?after=3&access_token=" in out
    assert token not in out and token.partition(".")[2] not in out
    assert len(out.splitlines()) == 2


def test_the_keys_of_provider_profiles_are_scrubbed_by_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A profile's key comes from the variable its `api_key_env` names, not from a setting:
    it is a configured secret all the same (an error text that echoes it is scrubbed)."""
    from app.settings import Settings

    monkeypatch.setenv("TEAM_VLLM_KEY", "plain-team-key-0042")
    doc = {
        "profiles": {
            "team": {
                "wire": "openai_chat",
                "base_url": "http://127.0.0.1:8000/v1",
                "api_key_env": "TEAM_VLLM_KEY",
            }
        }
    }
    redactor = Redactor(settings_secrets(Settings(providers=json.dumps(doc))))
    assert "plain-team-key-0042" not in redactor.text("401: bad key plain-team-key-0042")
    broken = Settings(providers="{not json")  # (the start-up refuses it: nothing to add)
    assert settings_secrets(broken) == settings_secrets(Settings())


def test_logs_go_to_stderr_as_it_is_when_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process whose stderr is replaced after its logging was configured (pytest's
    capture of each test, an embedding host) logs to the new one, not the closed old one."""
    old, new = io.StringIO(), io.StringIO()
    monkeypatch.setattr(sys, "stderr", old)
    configure_logging(SETTINGS, json=True)
    monkeypatch.setattr(sys, "stderr", new)
    old.close()
    structlog.get_logger("agentrun.test").info("after the swap", n=1)
    assert json.loads(new.getvalue().splitlines()[-1])["event"] == "after the swap"
