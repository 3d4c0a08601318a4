"""What the worker hands the core: a provider's answer as a `ModelTurn`, a run's
invalid-call policy as an action, and why a model call waits to be retried. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.core import (
    Fail,
    InvalidToolCallAction,
    InvalidToolCallContext,
    ModelTurn,
    Repair,
    Retry,
    Skip,
    Stop,
)
from app.providers.backoff import BackoffPolicy, Delay
from app.providers.base import ProviderTurn
from app.store.changes import Backoff


def invalid_call_action(
    policy: Mapping[str, Any], context: InvalidToolCallContext
) -> InvalidToolCallAction | None:
    """The run's policy for an invalid tool call; None means `ask` (suspend for a human)."""
    action = policy.get("action", "fail")
    if action == "ask":
        return None
    if action == "retry":
        return Retry(
            policy.get("feedback")
            or f"Tool `{context.tool_name}` is not available. "
            f"Available tools: {', '.join(context.allowed_tools) or 'none'}."
        )
    if action == "repair":
        target = (policy.get("repair_to") or {}).get(context.tool_name)
        return Repair(target) if target else Fail()
    if action == "skip":
        return Skip(policy.get("reason") or f"Tool `{context.tool_name}` is not available.")
    if action == "stop":
        return Stop(policy.get("reason") or f"invalid tool call `{context.tool_name}`")
    return Fail()


def backoff_reason(
    delay: Delay, until: datetime, attempt: int, policy: BackoffPolicy, error: dict[str, Any]
) -> Backoff:
    """Why a run waits to retry a model call (see `changes.Backoff`)."""
    return Backoff(
        until=until,
        delay_seconds=delay.seconds,
        reason=delay.reason,
        attempt=attempt,
        max_attempts=policy.max_attempts,
        error=error,
        hint_seconds=delay.hint_seconds,
        header=delay.header,
    )


def model_turn(
    answer: ProviderTurn, executable: frozenset[str], allowed: frozenset[str]
) -> ModelTurn:
    return ModelTurn(
        choice=answer.choice,
        usage=answer.usage,
        executable_tool_names=executable,
        allowed_tool_names=allowed,
        message_id=answer.message_id,
        response_id=answer.response_id,
        provider_request_id=answer.provider_request_id,
        finish_reason=answer.finish_reason,
        raw=answer.raw,
    )
