"""Request bodies of the service operations (validated at the edge, once)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from app.core import MAX_JSON_INT, MIN_JSON_INT
from app.providers import profiles
from app.providers.params import EXTRA_BODY, validate_params
from app.providers.profile_config import NAME as PROFILE_NAME
from app.service import jsonschemas
from app.service.jsonrules import check_body

TOOL_NAME = r"^[a-zA-Z0-9_-]{1,64}$"
#: The tool a run with an `output_schema` ends by calling, and how often a call of it that
#: misses a required field (or a text answer that is not such JSON) is asked again.
OUTPUT_TOOL = "final_output"
OUTPUT_RETRIES = 2
RUN_ID = r"^[A-Za-z0-9_-]{1,40}$"
#: The fields a continuing run takes from the run it continues unless its body sets them
#: (present in the body, `null` and `[]` included: they override).
INHERITED = (
    "model",
    "output_schema",
    "preamble",
    "tools",
    "tool_choice",
    "tool_concurrency",
    "invalid_tool_call",
    "webhook",
    "tool_queue",
    "approval",
    "approval_timeout",
    "approval_on_timeout",
    "compaction",
)
CONTINUE_DESCRIPTION = (
    "Continue the conversation of this earlier run, which must be `completed` (else 409 "
    "`run-state-conflict` naming its status; 404 if there is no such run). Its whole "
    "conversation (its `history`, prompt and messages) becomes this run's history, followed "
    "by this run's `history` (if any) and `prompt`. These fields are taken from the earlier "
    "run unless this body sets them (a field present, `null` or `[]` included, overrides): "
    + ", ".join(f"`{name}`" for name in INHERITED)
    + ". The others (`max_turns`, `expires_in`, `metadata`, `stream`) are this run's own, "
    "with their usual defaults. The run's `conversation_id` is the first run's id. "
    "`model` is required unless this is set (else 422 `invalid-request`)."
)

#: An agent's name (it is part of URLs), and a reference to one: `name` (its latest
#: version) or `name@version`.
AGENT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
AGENT_REF = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}(@[1-9][0-9]{0,8})?$"
#: An agent tool's parameters unless it gives its own: one string, the child's prompt.
AGENT_INPUT: dict[str, Any] = {
    "type": "object",
    "properties": {"input": {"type": "string", "description": "what to ask the agent"}},
    "required": ["input"],
}

#: A tool-call queue's name (it is part of URLs: no `/`, and no `.` first).
QUEUE_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
QueueName = Annotated[str, Field(pattern=QUEUE_NAME, description="a tool-call queue's name")]


def output_schema_problem(schema: dict[str, Any]) -> str | None:
    """Why an `output_schema` cannot be the final tool's parameters (a rule the request's
    JSON Schema does not state: a 422 `invalid-request`), or None."""
    if schema.get("type") != "object":
        return 'output_schema: an output schema describes an object: `"type": "object"`'
    try:
        jsonschemas.check(schema)
    except jsonschemas.BadSchema as exc:
        return f"output_schema: {exc}"
    return None


def integral(value: Any) -> Any:
    """JSON numbers with no fractional part as `int` (JSON has one number type: `5.0` is
    the integer 5), inside arrays and objects too; every other value as it is."""
    cls = type(value)
    if cls is float and value.is_integer() and MIN_JSON_INT <= value <= MAX_JSON_INT:
        return int(value)  # (1e30 stays a float: as an int it would leave the 64-bit range)
    if cls is list:
        return [integral(v) for v in value]
    if cls is dict:
        return {k: integral(v) for k, v in value.items()}
    return value


def _integral_float(value: Any) -> Any:
    return integral(value) if type(value) is float else value


#: Integer fields: `5` and `5.0` are accepted; `"5"`, `5.5` and `true` are not.
_AS_INT = BeforeValidator(_integral_float)  # last: it runs first, before the checks
AS_INT = _AS_INT  # (for the features' bodies)
MaxRetries = Annotated[int, Field(ge=0, le=100, strict=True), _AS_INT]
MaxTurns = Annotated[int, Field(ge=1, le=1000, strict=True), _AS_INT]
Concurrency = Annotated[int, Field(ge=1, le=64, strict=True), _AS_INT]
Priority = Annotated[int, Field(ge=-100, le=100, strict=True), _AS_INT]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Body(Strict):
    """A request body: the text and JSON rule (`app.service.jsonrules`) is applied to the
    whole parsed body once, before its fields are validated."""

    @model_validator(mode="before")
    @classmethod
    def json_rule(cls, data: Any) -> Any:
        return check_body(data)


def inherited_model_problem(model: Any) -> str | None:
    """Why the `model` a continuation inherits cannot run in this deployment any more (its
    profile was removed, or no longer allows the model or its params), as a 422's detail
    (`model.provider: ...`); None: it can."""
    try:
        ModelSpec.model_validate(model)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(["model", *(str(part) for part in error["loc"])])
        return f"{where}: {error['msg']} (inherited from previous_run_id)"
    return None


class ModelSpec(BaseModel):
    """`{"provider": ..., "name": ..., ...provider params}`: `provider` names one of the
    deployment's provider profiles (`app.providers.profiles.active`), `name` a model that
    profile allows; extra keys are params, checked against the documented parameters of
    the profile's wire (`app.providers.params`)."""

    model_config = ConfigDict(extra="allow")
    provider: str = Field(
        pattern=PROFILE_NAME,
        description="a provider profile of the deployment: the built-in `openai`, "
        "`openai_responses`, `anthropic`, `scripted`, or a configured one",
    )
    name: str = Field(min_length=1, max_length=200)

    @field_validator("provider")
    @classmethod
    def known_profile(cls, name: str) -> str:
        if profiles.active().get(name) is None:
            raise PydanticCustomError(
                "unknown_provider",
                "no provider profile named {name}; this deployment has: {names}",
                {"name": repr(name), "names": ", ".join(profiles.active().names())},
            )
        return name

    @model_validator(mode="after")
    def known_params(self) -> ModelSpec:
        profile = profiles.active().get(self.provider)
        assert profile is not None  # (`known_profile`)
        if not profile.allows(self.name):
            raise self._bad_name(
                PydanticCustomError(
                    "model_not_allowed",
                    "the provider profile {profile} does not allow this model; it allows: {models}",
                    {
                        "profile": repr(profile.name),
                        "models": ", ".join(sorted(profile.models or ())),
                    },
                )
            )
        if not profile.in_path(self.name):
            raise self._bad_name(
                PydanticCustomError(
                    "model_not_a_path_segment",
                    "the provider profile {profile} puts the model in its URL's path: "
                    "one segment, not . or .., without / or \\",
                    {"profile": repr(profile.name)},
                )
            )
        extra = self.__pydantic_extra__ or {}
        params = {k: v if k == EXTRA_BODY else integral(v) for k, v in extra.items()}
        validate_params(profile.param_table, params)
        extra.update(params)  # `max_tokens: 1024.0` is the integer 1024, sent as such
        return self

    def _bad_name(self, error: PydanticCustomError) -> ValidationError:
        """A 422 naming `model.name` (raised from the model's validator: the profile is known
        only after `provider`'s)."""
        return ValidationError.from_exception_data(
            "model", [{"type": error, "loc": ("name",), "input": self.name}]
        )

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class ApprovalRule(Strict):
    when: dict[str, Any] = Field(
        description="a JSON Schema (Draft 2020-12): a call whose parsed arguments validate "
        "against it waits for approval"
    )


#: Which calls wait for a person's decision (app.approvals.policies).
ApprovalPolicy = Literal["never", "always"] | ApprovalRule


class ToolDef(Strict):
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    queue: QueueName | None = Field(
        default=None,
        description="executors of this queue lease this tool's calls "
        "(overrides the run's `tool_queue`)",
    )
    approval: ApprovalPolicy | None = Field(
        default=None,
        description="which calls of this tool wait for approval: `never`, `always`, or "
        '`{"when": <JSON Schema>}` (default: the run\'s `approval`)',
    )
    agent: str | None = Field(
        default=None,
        pattern=AGENT_REF,
        description="an agent tool: each call starts a child run of this named agent of the "
        "tenant (`name`: its latest version when called; `name@2`: that version), whose "
        "outcome answers the call; its `parameters` default to one string `input` (the "
        "child's prompt; other parameters: the arguments as JSON are its prompt)",
    )

    @model_validator(mode="after")
    def agent_tool(self) -> ToolDef:
        if self.agent is None:
            return self
        if self.queue is not None or self.approval is not None:
            raise PydanticCustomError(
                "cross_field",
                "an agent tool's calls are answered by its child run: it takes no queue or "
                "approval (the child agent's own tools do)",
            )
        if "parameters" not in self.model_fields_set:
            self.parameters = dict(AGENT_INPUT)
        return self


class SpecificTool(Strict):
    name: str = Field(pattern=TOOL_NAME)


ToolChoiceIn = Literal["auto", "none", "required"] | SpecificTool


class InvalidToolCallPolicy(Strict):
    action: Literal["fail", "retry", "repair", "skip", "stop", "ask"] = "fail"
    feedback: str | None = None  # retry: what the model is told
    max_retries: MaxRetries = 1  # retry: run-wide budget
    repair_to: dict[str, str] = Field(default_factory=dict)  # repair: invalid → valid name
    reason: str | None = None  # skip / stop


class WebhookSpec(Strict):
    url: str = Field(min_length=1, max_length=2000)


class HistoryMessage(Strict):
    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]]
    id: str | None = None


Tokens = Annotated[int | None, Field(ge=1, le=10**15, strict=True), _AS_INT]


class RunLimits(Strict):
    """A run's `limits` (each optional; unset: unlimited). Stored in `runs.limits`."""

    max_total_tokens: Tokens = Field(
        default=None, description="input + output tokens of every model call of the run"
    )
    max_cost_usd: float | None = Field(
        default=None,
        gt=0,
        le=1e9,
        allow_inf_nan=False,
        strict=True,
        description="US dollars of every model call of the run (the model must be priced)",
    )
    max_model_calls: Annotated[int | None, Field(ge=1, le=10**6, strict=True), _AS_INT] = Field(
        default=None, description="model calls answered (each one billed)"
    )
    max_duration_seconds: float | None = Field(
        default=None,
        gt=0,
        le=366 * 24 * 3600,
        allow_inf_nan=False,
        strict=True,
        description="wall-clock seconds since the run was created, checked before each call",
    )

    def stored(self) -> dict[str, Any] | None:
        return self.model_dump(exclude_none=True) or None


class CompactionPolicy(Strict):
    """A run's context compaction (`compaction`; docs/compaction.md): when the next model
    request's estimated tokens pass `threshold_tokens`, the worker first replaces the
    older turns with a summary (system and user messages kept verbatim). Its options are
    left out for their defaults, never null (as `model` is everywhere); integers take
    `5.0` as `5`, as every integer field does."""

    threshold_tokens: Annotated[int, Field(ge=1000, le=10**9, strict=True), _AS_INT] = Field(
        description="compact before a model call whose request is estimated above this many "
        "tokens (the JSON text of the preamble, tools and messages, 4 characters a token)"
    )
    model: ModelSpec | None = Field(
        default=None, description="the summarising model (default: the run's own `model`)"
    )
    keep_recent_turns: Annotated[int, Field(ge=1, le=1000, strict=True), _AS_INT] = Field(
        default=2,
        description="the latest model turns (each with its tool results) kept as they are",
    )
    instructions: str | SkipJsonSchema[None] = Field(
        default=None,
        min_length=1,
        max_length=20_000,
        description="what the summarising model is told (default: the service's)",
    )

    @field_validator("model", "keep_recent_turns", "instructions", mode="before")
    @classmethod
    def not_null(cls, value: Any, info: ValidationInfo) -> Any:
        """An option may be left out (its default), not set to null."""
        if value is None:
            raise PydanticCustomError(
                "null_option",
                "{field} may be left out (its default), not null",
                {"field": info.field_name},
            )
        return value


class LimitsIn(Body, RunLimits):
    """`POST /v1/runs/{id}/limits`: the limits named are set (null removes one), the
    others are kept."""


class RunFields(Body):
    """The fields that configure a run: a create's (`RunCreate`) and a named agent's
    (app.agents), defined once."""

    # Optional only when continuing a run (`previous_run_id`): the service checks that.
    # Left out, never null (`model_not_null`; `app.api.openapi` drops null from the schema).
    model: ModelSpec | None = None
    preamble: str | None = None
    tools: list[ToolDef] = Field(default_factory=list)
    tool_choice: ToolChoiceIn | None = None
    max_turns: MaxTurns | None = None
    limits: RunLimits | None = Field(
        default=None, description="the run's budget, checked before each model call"
    )
    tool_concurrency: Concurrency = 1
    invalid_tool_call: InvalidToolCallPolicy = Field(default_factory=InvalidToolCallPolicy)
    webhook: WebhookSpec | None = None
    expires_in: float | None = Field(default=None, gt=0, le=365 * 24 * 3600, strict=True)
    metadata: dict[str, Any] = Field(default_factory=dict)
    stream: bool = Field(default=False, strict=True)
    priority: Priority = Field(
        default=0,
        description="claim order: a queued run of higher priority goes first; within one "
        "priority, fair keys (tenants) take turns",
    )
    tool_queue: QueueName | None = Field(
        default=None,
        description="the run's tool calls are leased by executors of this queue "
        "(`POST /v1/queues/{queue}/lease`) instead of being answered by whoever answers the "
        "run; a tool's own `queue` overrides it",
    )

    approval: ApprovalPolicy | None = Field(
        default=None,
        description="the approval policy of the tools that name none (default `never`)",
    )
    approval_timeout: float | None = Field(
        default=None,
        gt=0,
        le=365 * 24 * 3600,
        strict=True,
        description="seconds a gated call waits for a decision before it gets "
        "`approval_on_timeout` (default: it waits as long as the run does)",
    )
    approval_on_timeout: Literal["reject", "approve"] | None = Field(
        default=None, description="the decision a call that waited too long gets (`reject`)"
    )
    output_schema: dict[str, Any] | None = Field(
        default=None,
        description="structured output: a JSON Schema of an object. The model is offered "
        f"the tool `{OUTPUT_TOOL}` with it as parameters, and the run completes when it "
        "calls it (its `output`: the arguments as JSON; a call missing a required field is "
        f"asked again, up to {OUTPUT_RETRIES} times) or answers with JSON text that holds "
        "the required fields",
    )
    compaction: CompactionPolicy | None = Field(
        default=None,
        description="context compaction for long runs: past `threshold_tokens`, older turns "
        "are replaced by a summary before the next model call (the run's log keeps them)",
    )

    @field_validator("model", mode="before")
    @classmethod
    def model_not_null(cls, value: Any) -> Any:
        """`model` may be left out (continuing a run), not set to null."""
        if value is None:
            raise PydanticCustomError("model_type", "model must be an object")
        return value

    @field_validator("tools")
    @classmethod
    def unique_tool_names(cls, tools: list[ToolDef]) -> list[ToolDef]:
        names = [t.name for t in tools]
        if len(names) != len(set(names)):
            raise PydanticCustomError("cross_field", "tool names must be unique")
        return tools

    @model_validator(mode="after")
    def output_tool_free(self) -> RunFields:
        if self.output_schema is not None and any(t.name == OUTPUT_TOOL for t in self.tools):
            raise PydanticCustomError(
                "cross_field", f"a tool named {OUTPUT_TOOL} is the output schema's: rename it"
            )
        return self


class RunCreate(RunFields):
    prompt: str = Field(min_length=1)
    agent: str | None = Field(
        default=None,
        pattern=AGENT_REF,
        description="start the run from this named agent of the tenant (`name`: its latest "
        "version; `name@2`: that version): its fields are the run's, and the body may add "
        "or narrow only `metadata` (merged over the agent's), `limits` (each at most the "
        "agent's), `webhook`, `priority`, `expires_in`, `stream` and `history`",
    )
    previous_run_id: str | None = Field(
        default=None, pattern=RUN_ID, description=CONTINUE_DESCRIPTION
    )
    if_busy: Literal["reject", "enqueue", "interrupt"] = Field(
        default="reject",
        description="with `previous_run_id`, when the conversation's latest run is still "
        "active: `reject` (409 naming it), `enqueue` (this run waits and starts when that "
        "one ends, continuing from it) or `interrupt` (that run is cancelled and this one "
        "continues from its last durable point)",
    )
    history: list[HistoryMessage] = Field(default_factory=list)


class ToolResultIn(Strict):
    tool_call_id: str = Field(min_length=1, max_length=255)
    output: Any
    is_error: bool = Field(default=False, strict=True)


class ToolResultsIn(Body):
    results: Annotated[list[ToolResultIn], Field(min_length=1, max_length=1000)]


class DecisionIn(Strict):
    tool_call_id: str = Field(min_length=1, max_length=255)
    arguments_hash: str = Field(
        min_length=1,
        max_length=128,
        description="the `arguments_hash` of the call as the decider saw it (any other "
        "value is stale: 409 `approval-stale`)",
    )
    position: int | None = Field(
        default=None,
        ge=0,
        lt=2**31,
        description="the call's `position` in its round: needed only when two calls of the "
        "round share `tool_call_id` (else `422 invalid-request`)",
    )
    action: Literal["approve", "reject"]
    message: str | None = Field(
        default=None, max_length=100_000, description="reject: what the model is told"
    )
    arguments: dict[str, Any] | None = Field(
        default=None,
        description="approve: edited arguments, executed instead of the model's (validated "
        "against the tool's `parameters`)",
    )

    @model_validator(mode="after")
    def fits_action(self) -> DecisionIn:
        if self.action == "reject" and self.arguments is not None:
            raise PydanticCustomError("cross_field", "arguments are for approve only")
        if self.action == "approve" and self.message is not None:
            raise PydanticCustomError("cross_field", "message is for reject only")
        return self


class DecisionsIn(Body):
    """Decisions on a run's gated tool calls (`POST /v1/runs/{id}/approvals`)."""

    decisions: Annotated[list[DecisionIn], Field(min_length=1, max_length=1000)]


class ResolutionIn(Body):
    """The answer to a parked invalid tool call (`waiting_reason = resolution`)."""

    action: Literal["fail", "retry", "repair", "skip", "stop"]
    feedback: str | None = None
    tool_name: str | None = None
    reason: str | None = None


# --- the tool-call queue (app.toolqueue.service) ----------------------------------------------

#: The longest a lease request may wait for calls (proxies commonly cut idle requests at 60 s).
MAX_LEASE_WAIT_SECONDS = 60.0
LeaseSeconds = Annotated[float, Field(ge=1, le=3600, strict=True)]


class LeaseIn(Body):
    executor: str = Field(
        default="", max_length=100, description="who leases (recorded as the lease's owner)"
    )
    limit: Annotated[int, Field(ge=1, le=100, strict=True), _AS_INT] = 1
    wait: float = Field(
        default=30.0,
        ge=0,
        le=MAX_LEASE_WAIT_SECONDS,
        strict=True,
        description="seconds to wait for a call when none is leasable (0: look once)",
    )
    lease_seconds: LeaseSeconds = Field(
        default=60.0, description="how long the lease lasts unless extended by a heartbeat"
    )


class HeartbeatIn(Body):
    lease_seconds: LeaseSeconds = Field(
        default=60.0, description="the lease's new length, from now"
    )


class LeasedResultIn(Body):
    output: Any
    is_error: bool = Field(default=False, strict=True)
