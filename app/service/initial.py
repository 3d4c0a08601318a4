"""A new run's beginnings: its agent settings (the body's, or inherited from the run it
continues) and its state machine built from its configuration (by a create, and by the
restart of a run that waited for its conversation)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from app.core import AgentRun, Message
from app.service import convert
from app.service.schemas import (
    INHERITED,
    OUTPUT_RETRIES,
    OUTPUT_TOOL,
    InvalidToolCallPolicy,
    RunCreate,
)
from app.store.hooks import Continuation


def retry_budget(policy: InvalidToolCallPolicy, max_turns: int) -> int:
    """The core's run-wide budget of invalid-call retries: `max_retries` under the `retry`
    policy; under `ask` every `retry` a person picks is honoured (each is a model call, so
    `max_turns` bounds them); no other policy retries."""
    if policy.action == "retry":
        return policy.max_retries
    return max_turns if policy.action == "ask" else 0


def initial_run(
    prompt: str | Message, history: Sequence[Message], max_turns: int, config: Mapping[str, Any]
) -> AgentRun:
    """A new run's state machine from its configuration (create, and `restart`)."""
    policy = InvalidToolCallPolicy.model_validate(config["invalid_tool_call"])
    schema = config.get("output_schema")
    return AgentRun(
        prompt,
        max_turns=max_turns,
        history=list(history) or None,
        tool_choice=convert.tool_choice_from_config(config["tool_choice"]),
        max_invalid_tool_call_retries=retry_budget(policy, max_turns),
        output_tool_name=None if schema is None else OUTPUT_TOOL,
        output_schema=schema,
        max_output_retries=0 if schema is None else OUTPUT_RETRIES,
    )


def agent_settings(body: RunCreate, before: Continuation | None) -> dict[str, Any]:
    """The inherited fields (`INHERITED`) as the run's configuration stores them: the
    body's where it sets them (or there is no earlier run), else the earlier run's."""
    request = body.model_dump(mode="json", include=set(INHERITED))
    if before is None:
        return request
    return {
        name: request[name] if name in body.model_fields_set else before.config.get(name)
        for name in INHERITED
    }
