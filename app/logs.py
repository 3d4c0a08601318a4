"""Logging for every process, configured once: structlog with the standard library routed
through it, JSON lines when stderr is not a terminal and readable lines when it is,
tracebacks without local variables, and a redaction step that every record passes last.

Why redaction is the last step and not a convention at the call sites: the secrets that
leaked were never logged on purpose. They came from tracebacks that rendered local
variables (a database URL with its password, a callback token), and from exception texts
of libraries. So the step sees the final strings, exception text included, and scrubs
(1) every configured secret by value and (2) every secret by its shape: passwords in URLs
and DSNs, bearer credentials, Standard Webhooks secrets, provider keys, callback tokens,
browser tokens (in an `?access_token=` query too), the database's API keys.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable, Mapping
from typing import Any, TextIO
from urllib.parse import unquote, urlsplit

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"

#: Event-dict keys whose values are secrets whatever they hold.
_SECRET_KEYS = re.compile(
    r"(?i)^(password|passwd|secret|token|api_?key|authorization|callback_token|"
    r"webhook_secret|.*_(key|secret|token|password))$"
)

#: Secrets recognised by their shape (pattern, replacement).
_SHAPES: tuple[tuple[re.Pattern[str], str], ...] = (
    # scheme://user:password@host (database URLs, proxies)
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+(@)"), r"\1" + REDACTED + r"\2"),
    # libpq key=value DSNs, query strings and similar: password=..., token: ..., api_key=...
    (
        re.compile(
            r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token|token)"
            r"(['\"]?\s*[:=]\s*['\"]?)[^\s'\",;&)]+"
        ),
        r"\1\2" + REDACTED,
    ),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}"), r"\1 " + REDACTED),
    (re.compile(r"\bwhsec_[A-Za-z0-9+/=]+"), "whsec_" + REDACTED),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), "sk-" + REDACTED),  # OpenAI and Anthropic keys
    (re.compile(r"(/callbacks/)[A-Za-z0-9_-]+"), r"\1" + REDACTED),
    (re.compile(r"\barb_[A-Za-z0-9_.-]+"), "arb_" + REDACTED),  # browser tokens
    # API keys of the database (app.tenancy.keys): the lookup id is public, the rest not
    (re.compile(r"\b(ark_[0-9a-f]{16}_)[A-Za-z0-9_-]+"), r"\1" + REDACTED),
)


class Redactor:
    """Scrubs secrets from strings, and from every string inside a log event."""

    def __init__(self, secrets: Iterable[str | None] = ()) -> None:
        # Longest first, so a secret that contains another is replaced whole.
        values = {s for s in secrets if s and len(s) >= 4}
        self._values = sorted(values, key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._values:
            if secret in value:
                value = value.replace(secret, REDACTED)
        for pattern, replacement in _SHAPES:
            value = pattern.sub(replacement, value)
        return value

    def value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {k: self._field(str(k), v) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v) for v in value]
        if isinstance(value, bool | int | float) or value is None:
            return value
        return self.text(repr(value))

    def _field(self, key: str, value: Any) -> Any:
        if _SECRET_KEYS.match(key) and value not in (None, ""):
            return REDACTED
        return self.value(value)

    def __call__(self, _logger: WrappedLogger, _name: str, event: EventDict) -> EventDict:
        for key in list(event):
            event[key] = self._field(key, event[key])
        return event


def settings_secrets(settings: Any) -> list[str]:
    """The secret values a deployment configures: database password, API keys, webhook
    secret, provider keys."""
    out: list[str] = list(getattr(settings, "api_key_list", []) or [])
    for name in ("webhook_secret", "openai_api_key", "anthropic_api_key"):
        value = getattr(settings, name, None)
        if value:
            out.append(value)
    url = getattr(settings, "database_url", "") or ""
    password = urlsplit(url).password
    if password:
        out.extend({password, unquote(password)})
    out.extend(_profile_keys(settings))
    return out


def _profile_keys(settings: Any) -> list[str]:
    """The keys of the configured provider profiles (read from the variables their
    `api_key_env` names, so no setting holds them); none when the document is bad (the
    process then refuses to start)."""
    if not (getattr(settings, "providers", None) or getattr(settings, "providers_file", None)):
        return []
    from app.providers.profiles import ProfileError, load_profiles

    try:
        profiles = load_profiles(settings, require_keys=False)
    except ProfileError:
        return []
    return [p.api_key for p in profiles if p.api_key]


def _drop_meta(_logger: WrappedLogger, _name: str, event: EventDict) -> EventDict:
    event.pop("_record", None)
    event.pop("_from_structlog", None)
    return event


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to `sys.stderr` as it is when a record is written, not as it was when the
    logging was configured: a process whose stderr is replaced later (an embedding host,
    pytest's capture of each test) logs to the new one, never to a closed file."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


def configure_logging(
    settings: Any = None,
    *,
    stream: TextIO | None = None,
    json: bool | None = None,
    level: int = logging.INFO,
) -> Redactor:
    """Configure structlog and the standard library for this process (idempotent: a later
    call replaces the earlier configuration). Returns the redactor it installed."""
    if json is None:
        json = not (stream if stream is not None else sys.stderr).isatty()
    redactor = Redactor(settings_secrets(settings) if settings is not None else ())
    shared: list[Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
        # Tracebacks as plain text, before redaction: never the "rich" or dict forms,
        # which render local variables.
        structlog.processors.format_exc_info,
    ]
    renderer: Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    )
    structlog.configure(
        processors=[
            *shared,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[_drop_meta, redactor, renderer],
    )
    handler: logging.Handler = _Stderr() if stream is None else logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_agentrun", False):
            root.removeHandler(old)
    handler._agentrun = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    # Libraries that install their own handlers log through ours instead.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "alembic", "sqlalchemy"):
        lib = logging.getLogger(name)
        lib.handlers.clear()
        lib.propagate = True
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)  # start-up noise
    return redactor
