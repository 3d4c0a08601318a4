"""The documented request parameters of Anthropic's Messages API.

Names and types mirror the official SDK's request type
(`anthropic.types.message_create_params.MessageCreateParamsBase`);
`tests/providers/test_params_tables.py` compares this table with it, key by key and type by
type. Keys the adapter owns (messages, system, tools, ...) are not here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Required

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from app.providers.anthropic import DEFAULT_MAX_TOKENS

#: Documented floor of `thinking.budget_tokens` (and it must stay below `max_tokens`).
MIN_THINKING_BUDGET = 1024


class CacheControl(TypedDict, total=False):
    type: Required[Literal["ephemeral"]]
    ttl: Literal["5m", "1h"]


class Skill(TypedDict, total=False):
    skill_id: Required[str]
    type: Required[Literal["anthropic", "custom"]]
    version: str


class Container(TypedDict, total=False):
    id: str | None
    skills: list[Skill] | None


class Diagnostics(TypedDict, total=False):
    previous_message_id: str | None


class Metadata(TypedDict, total=False):
    user_id: str | None


class JSONOutputFormat(TypedDict, total=False):
    schema: Required[dict[str, Any]]
    type: Required[Literal["json_schema"]]


class OutputConfig(TypedDict, total=False):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None
    format: JSONOutputFormat | None


ThinkingDisplay = Literal["summarized", "omitted"]


class ThinkingEnabled(TypedDict, total=False):
    budget_tokens: Required[Annotated[int, Field(ge=MIN_THINKING_BUDGET)]]
    type: Required[Literal["enabled"]]
    display: ThinkingDisplay | None


class ThinkingDisabled(TypedDict, total=False):
    type: Required[Literal["disabled"]]


class ThinkingBetweenTools(TypedDict, total=False):
    type: Required[Literal["between_tools"]]


class ThinkingAdaptive(TypedDict, total=False):
    type: Required[Literal["adaptive"]]
    display: ThinkingDisplay | None


Thinking = Annotated[
    ThinkingEnabled | ThinkingDisabled | ThinkingBetweenTools | ThinkingAdaptive,
    Field(discriminator="type"),
]


@with_config(ConfigDict(extra="forbid", strict=True))
class MessagesParams(TypedDict, total=False):
    """`anthropic`: every documented parameter the adapter does not own. `max_tokens` is
    the adapter's default of 4096 when absent (0 only pre-warms the prompt cache)."""

    cache_control: CacheControl | None
    container: Container | str | None
    diagnostics: Diagnostics | None
    inference_geo: str | None
    max_tokens: Annotated[int, Field(ge=0)]
    metadata: Metadata
    output_config: OutputConfig
    service_tier: Literal["auto", "standard_only"]
    speed: Literal["standard", "fast"] | None
    stop_sequences: list[str]
    thinking: Thinking
    user_profile_id: str
    workspace_id: str


def check_thinking_budget(params: dict[str, Any]) -> str | None:
    """The documented cross-field rule: thinking's budget stays below `max_tokens`."""
    thinking = params.get("thinking")
    if not isinstance(thinking, dict) or thinking.get("type") != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    max_tokens = params.get("max_tokens", DEFAULT_MAX_TOKENS)
    if isinstance(budget, int) and isinstance(max_tokens, int) and budget >= max_tokens:
        return f"must be less than max_tokens ({max_tokens})"
    return None
