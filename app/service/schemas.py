"""Request bodies of the service operations (validated at the edge, once)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from app.providers.params import validate_params

TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"
INT_MIN, INT_MAX = -(2**63), 2**64 - 1


def _numbers_fit(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_numbers_fit(v) for v in value.values())
    if isinstance(value, list):
        return all(_numbers_fit(v) for v in value)
    return not isinstance(value, int) or isinstance(value, bool) or INT_MIN <= value <= INT_MAX


def check_json_numbers(value: Any, where: str = "body") -> None:
    """Free-form JSON is stored and hashed as JSON: integers must fit in 64 bits. (A
    quick pass first; the place of an offending number is only worked out on failure.)"""
    if _numbers_fit(value):
        return
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if not INT_MIN <= value <= INT_MAX:
            raise ValueError(f"{where}: integer out of the 64-bit range")
    elif isinstance(value, dict):
        for k, v in value.items():
            check_json_numbers(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_json_numbers(v, f"{where}[{i}]")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSpec(BaseModel):
    """`{"provider": ..., "name": ..., ...provider params}`; extra keys are params, checked
    against the provider's documented parameters (`app.providers.params`)."""

    model_config = ConfigDict(extra="allow")
    provider: Literal["openai", "openai_responses", "anthropic", "scripted"]
    name: str = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def known_params(self) -> ModelSpec:
        validate_params(self.provider, self.model_extra or {})
        return self

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ToolDef(Strict):
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})


class SpecificTool(Strict):
    name: str = Field(pattern=TOOL_NAME)


ToolChoiceIn = Literal["auto", "none", "required"] | SpecificTool


class InvalidToolCallPolicy(Strict):
    action: Literal["fail", "retry", "repair", "skip", "stop", "ask"] = "fail"
    feedback: str | None = None  # retry: what the model is told
    max_retries: int = Field(default=1, ge=0, le=100)  # retry: run-wide budget
    repair_to: dict[str, str] = Field(default_factory=dict)  # repair: invalid → valid name
    reason: str | None = None  # skip / stop


class WebhookSpec(Strict):
    url: str = Field(min_length=1, max_length=2000)


class HistoryMessage(Strict):
    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]]
    id: str | None = None


class RunCreate(Strict):
    prompt: str = Field(min_length=1)
    model: ModelSpec
    preamble: str | None = None
    history: list[HistoryMessage] = Field(default_factory=list)
    tools: list[ToolDef] = Field(default_factory=list)
    tool_choice: ToolChoiceIn | None = None
    max_turns: int | None = Field(default=None, ge=1, le=1000)
    tool_concurrency: int = Field(default=1, ge=1, le=64)
    invalid_tool_call: InvalidToolCallPolicy = Field(default_factory=InvalidToolCallPolicy)
    webhook: WebhookSpec | None = None
    expires_in: float | None = Field(default=None, gt=0, le=365 * 24 * 3600)
    metadata: dict[str, Any] = Field(default_factory=dict)
    stream: bool = False

    @model_validator(mode="after")
    def json_numbers_fit(self) -> RunCreate:
        check_json_numbers(self.model_dump(mode="python"))
        return self

    @field_validator("tools")
    @classmethod
    def unique_tool_names(cls, tools: list[ToolDef]) -> list[ToolDef]:
        names = [t.name for t in tools]
        if len(names) != len(set(names)):
            raise ValueError("tool names must be unique")
        return tools


class ToolResultIn(Strict):
    tool_call_id: str = Field(min_length=1, max_length=255)
    output: Any
    is_error: bool = False


class ToolResultsIn(Strict):
    results: Annotated[list[ToolResultIn], Field(min_length=1, max_length=1000)]

    @model_validator(mode="after")
    def json_numbers_fit(self) -> ToolResultsIn:
        check_json_numbers([r.output for r in self.results], "results")
        return self


class ResolutionIn(Strict):
    """The answer to a parked invalid tool call (`waiting_reason = resolution`)."""

    action: Literal["fail", "retry", "repair", "skip", "stop"]
    feedback: str | None = None
    tool_name: str | None = None
    reason: str | None = None
