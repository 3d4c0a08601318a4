"""Typed refusals of the service layer. The API maps each `code` to an RFC 9457 problem."""

from __future__ import annotations

from typing import Any

# Re-exported for the API: which failures mean "the database is not there right now" is
# the store's knowledge (app.store.errors); the API answers them 503 with this Retry-After.
from app.store.errors import RETRY_AFTER_SECONDS as RETRY_AFTER_SECONDS
from app.store.errors import is_unavailable as is_unavailable


class ServiceError(Exception):
    code = "service-error"
    status = 400
    title = "Request refused"

    def __init__(self, detail: str, **extra: Any) -> None:
        super().__init__(detail)
        self.detail = detail
        self.extra = extra

    def headers(self) -> dict[str, str] | None:
        """Response headers the refusal needs (e.g. `Retry-After`)."""
        return None


class RunNotFound(ServiceError):
    code = "run-not-found"
    status = 404
    title = "Run not found"


class InvalidRequest(ServiceError):
    code = "invalid-request"
    status = 422
    title = "Invalid request"


class IdempotencyKeyReused(ServiceError):
    code = "idempotency-key-reused"
    status = 422
    title = "Idempotency key reused with a different request"


class IdempotencyInFlight(ServiceError):
    code = "idempotency-in-flight"
    status = 409
    title = "A request with this idempotency key is still being processed"


class RunStateConflict(ServiceError):
    """The run is not in the state the operation needs; `current` names who won."""

    code = "run-state-conflict"
    status = 409
    title = "Run is not in a state that allows this"

    def __init__(self, detail: str, current: str) -> None:
        super().__init__(detail, current_status=current)
        self.current = current


class ConversationBusy(RunStateConflict):
    """A continuation of a conversation whose latest run is still active (`if_busy`
    `reject`: `active_run_id`), or of a run that is not its latest (`latest_run_id`)."""

    def __init__(self, detail: str, current: str, **extra: Any) -> None:
        ServiceError.__init__(self, detail, current_status=current, **extra)
        self.current = current


class ToolCallNotPending(ServiceError):
    code = "tool-call-not-pending"
    status = 422
    title = "Tool call is not pending"


class ToolResultConflict(ServiceError):
    code = "tool-result-conflict"
    status = 409
    title = "A different result was already submitted for this tool call"


class CallbackTokenInvalid(ServiceError):
    code = "callback-token-invalid"
    status = 404
    title = "Callback token unknown or no longer valid"


class LeaseNotFound(ServiceError):
    code = "lease-not-found"
    status = 404
    title = "No such lease"


class LeaseLost(ServiceError):
    """The call's lease moved on: leased again to another executor (after this lease
    lapsed), or the call was answered or left the queue."""

    code = "tool-call-lease-lost"
    status = 409
    title = "The tool call's lease was lost"


class ApprovalStale(ServiceError):
    """The decision names arguments (by their hash) the call does not have."""

    code = "approval-stale"
    status = 409
    title = "The decision was made on other arguments"


class ForkSplit(ServiceError):
    """A fork's checkpoint (or its patch) would part a tool call from its result."""

    code = "fork-split"
    status = 409
    title = "The fork would split a tool call from its result"


class ApprovalConflict(ServiceError):
    code = "approval-conflict"
    status = 409
    title = "A different decision was already made for this tool call"


class AgentNotFound(ServiceError):
    code = "agent-not-found"
    status = 404
    title = "Agent not found"


class ScheduleNotFound(ServiceError):
    code = "schedule-not-found"
    status = 404
    title = "Schedule not found"


class ScheduleBusy(ServiceError):
    code = "schedule-busy"
    status = 409
    title = "The schedule kept changing"


class ScheduleExists(ServiceError):
    code = "schedule-exists"
    status = 409
    title = "A schedule with this key exists"


class AgentExists(ServiceError):
    code = "agent-exists"
    status = 409
    title = "An agent with this name exists"
