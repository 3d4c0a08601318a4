"""Typed exceptions, built from the service's RFC 9457 problem documents.

Every refusal of the API is `application/problem+json` with a stable `type`
(`/problems/<code>`); `APIError.code` is that `<code>`, and the class is chosen by the HTTP
status, so `except NotFound` catches an unknown run and a stale callback token alike.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import httpx

from agentrun_client.models import FieldError, RunStatus

if TYPE_CHECKING:
    from agentrun_client.models import Run


class AgentrunError(Exception):
    """Base of every exception this client raises."""


class InvalidInput(AgentrunError, ValueError):
    """Refused by the client before anything was sent: text that cannot be sent (a lone
    surrogate such as `"\\ud800"`, which UTF-8 cannot encode; a header outside ASCII), NaN
    or an infinity (JSON has no number for them), a malformed run id, queue name, lease
    token or callback URL, an unknown status."""


class APIConnectionError(AgentrunError):
    """The service could not be reached (after the retries the budget allowed)."""


class APITimeoutError(APIConnectionError):
    """A request timed out (after the retries the budget allowed)."""


class WaitTimeout(AgentrunError, TimeoutError):
    """`wait` (or `run`) gave up before the run reached a status it waited for; `run` is the
    run as last seen."""

    def __init__(self, message: str, run: Run | None) -> None:
        super().__init__(message)
        self.run = run


class APIError(AgentrunError):
    """A problem document the API answered with."""

    def __init__(self, response: httpx.Response, problem: dict[str, Any]) -> None:
        self.response = response
        self.status = response.status_code
        self.problem = problem
        self.type: str = str(problem.get("type", "about:blank"))
        self.code = self.type.rsplit("/", 1)[-1] if self.type.startswith("/problems/") else ""
        self.title: str = str(problem.get("title", ""))
        self.detail: str = str(problem.get("detail", ""))
        self.instance: str | None = problem.get("instance")
        super().__init__(f"{self.status} {self.code or self.title}: {self.detail}")


class BadRequest(APIError):
    """400: the body is not valid JSON."""


class Unauthorized(APIError):
    """401: a valid `Authorization: Bearer <key>` is required."""


class Forbidden(APIError):
    """403."""


class NotFound(APIError):
    """404: no such run (`run-not-found`), agent (`agent-not-found`) or schedule
    (`schedule-not-found`), a stale callback token (`callback-token-invalid`), or no such
    route."""


class Conflict(APIError):
    """409: the run is in a status that does not allow this (`current_status` says which),
    a different result was already submitted for a call, an idempotent create with the
    same key is still in flight, or a name or key is taken (`agent-exists`,
    `schedule-exists`); `schedule-busy`: workers kept firing the schedule through the
    change's attempts (send it again); `fork-split`: a fork there would part a tool call
    (`tool_call_id`) from its result."""

    @property
    def current_status(self) -> RunStatus | None:
        value = self.problem.get("current_status")
        try:
            return RunStatus(value) if value is not None else None
        except ValueError:
            return None

    @property
    def tool_call_id(self) -> str | None:
        """`fork-split`: the tool call the fork would part from its result."""
        value = self.problem.get("tool_call_id")
        return value if isinstance(value, str) else None


class PayloadTooLarge(APIError):
    """413."""


class ValidationError(APIError):
    """422: the request breaks the schema (`validation-error`) or a rule the schema cannot
    state (`invalid-request`, `idempotency-key-reused`, `tool-call-not-pending`); `errors`
    names the fields."""

    @property
    def errors(self) -> list[FieldError]:
        items = self.problem.get("errors") or []
        return [FieldError.model_validate(e) for e in items if isinstance(e, dict)]


class _RetryAfter(APIError):
    @property
    def retry_after(self) -> float | None:
        """Seconds the server asked to wait (`Retry-After`), if it said."""
        return retry_after_of(self.response)


class RateLimited(_RetryAfter):
    """429: too many failed authentications from this address."""


class Unavailable(_RetryAfter):
    """503: the service's database is not reachable; retry after `retry_after`."""


class ServerError(APIError):
    """Any other 5xx."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    422: ValidationError,
    429: RateLimited,
    503: Unavailable,
}


def retry_after_of(response: httpx.Response) -> float | None:
    """`Retry-After` in seconds (delta-seconds only; an HTTP date is ignored)."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def error_for(response: httpx.Response) -> APIError:
    """The exception for an error response (a problem document, or whatever came)."""
    problem: dict[str, Any]
    try:
        body = response.json()
        problem = body if isinstance(body, dict) else {"detail": str(body)}
    except ValueError:
        problem = {"detail": response.text[:500]}
    problem.setdefault("status", response.status_code)
    problem.setdefault("title", response.reason_phrase)
    cls = _BY_STATUS.get(response.status_code)
    if cls is None:
        cls = ServerError if response.status_code >= 500 else APIError
    return cls(response, problem)
