"""The `scripted` provider's parameters (see `app.providers.scripted`)."""

from __future__ import annotations

from typing import Annotated, Any, Required

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

NonNegative = Annotated[int, Field(ge=0)]


class ScriptedCall(TypedDict, total=False):
    name: Required[str]
    arguments: Any
    id: Annotated[str, Field(min_length=1)]


class ScriptedUsage(TypedDict, total=False):
    input_tokens: NonNegative
    output_tokens: NonNegative


class ScriptEntry(TypedDict, total=False):
    text: str
    tool_calls: list[ScriptedCall]
    usage: ScriptedUsage
    finish_reason: str


@with_config(ConfigDict(extra="forbid", strict=True))
class ScriptedParams(TypedDict, total=False):
    script: list[ScriptEntry]
    delay_ms: Annotated[float, Field(ge=0, le=600_000)]
    fail_times: Annotated[int, Field(ge=0, le=1000)]
    # The output cap, honoured as a provider does: an answer's `output_tokens` above it
    # are cut to it (finish reason `length`).
    max_tokens: Annotated[int, Field(ge=1)]
