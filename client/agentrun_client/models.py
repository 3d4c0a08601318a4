"""The API's response bodies as typed models (the shapes of the service's `/openapi.json`).

Unknown fields are kept (`extra="allow"`), so a newer server does not break an older
client; an unknown kind of `required_action` parses as `RequiredAction`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class RunStatus(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    REQUIRES_ACTION = "requires_action"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


TERMINAL: frozenset[RunStatus] = frozenset(
    {RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.EXPIRED}
)
#: What `wait` waits for unless told: suspended or finished.
SUSPENDED_OR_FINISHED: frozenset[RunStatus] = TERMINAL | {RunStatus.REQUIRES_ACTION}


class EventType(StrEnum):
    """The event types a run's log, SSE and webhooks carry (a newer server may add more:
    `Event.type` is a plain string)."""

    RUN_CREATED = "run.created"
    RUN_CLAIMED = "run.claimed"
    MODEL_CALLED = "model.called"
    MODEL_FAILED = "model.failed"
    MODEL_DELTA = "model.delta"
    MODEL_ABORTED = "model.aborted"  # a call in flight abandoned: its run was cancelled
    TOOL_CALL_INVALID = "tool_call.invalid"
    TOOL_CALL_LEASED = "tool_call.leased"
    TOOL_CALL_LEASE_EXPIRED = "tool_call.lease_expired"
    RUN_REQUIRES_ACTION = "run.requires_action"
    TOOL_RESULT_RECEIVED = "tool_result.received"
    TOOL_RESULT_BY_OPERATOR = "tool_result.submitted_by_operator"
    RUN_RESOLVED = "run.resolved"
    RUN_RESUMED = "run.resumed"
    RUN_COMPLETED = "run.completed"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    RUN_EXPIRED = "run.expired"
    RUN_LEASE_LOST = "run.lease_lost"
    RUN_RELEASED = "run.released"
    RUN_RETRIED = "run.retried"
    RUN_EXPIRY_EXTENDED = "run.expiry_extended"
    RUN_CONTINUED = "run.continued"  # on a finished run: `data.run_id` continues it
    RUN_BUDGET_EXCEEDED = "run.budget_exceeded"  # suspended: its next call could pass a limit
    RUN_LIMITS_RAISED = "run.limits_raised"
    RUN_APPROVAL_REQUIRED = "run.approval_required"
    TOOL_CALL_APPROVED = "tool_call.approved"
    TOOL_CALL_REJECTED = "tool_call.rejected"
    RUN_CHILDREN_STARTED = "run.children_started"  # agent tools' calls became child runs
    MODEL_REPLAYED = "model.replayed"  # a replay's model call answered from the recording
    TOOLS_REPLAYED = "tools.replayed"  # a replay's tool round answered from the recording
    REPLAY_DIVERGED = "replay.diverged"  # a replay's request left the recording: `reason`
    RUN_COMPACTED = "run.compacted"  # older turns replaced by a summary (the log keeps them)


#: Events that end a run's live stream.
TERMINAL_EVENTS = frozenset(
    {EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED, EventType.RUN_EXPIRED}
)


class Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class ToolCall(Model):
    id: str
    name: str
    arguments: Any
    answered: bool = False
    queue: str | None = None  # executors of this queue lease it (docs/queue.md)


class SubmitToolResults(Model):
    type: Literal["submit_tool_results"] = "submit_tool_results"
    tool_calls: list[ToolCall]
    callback_url: str | None = None


class ResolveInvalidToolCall(Model):
    type: Literal["resolve_invalid_tool_call"] = "resolve_invalid_tool_call"
    tool_name: str
    tool_call_id: str | None = None
    arguments: str = ""


class RaiseLimits(Model):
    """Suspended on a budget: `limit` (of `scope`: run, tenant, deployment) has `spent`
    of `allowed`; `client.runs.raise_limits` answers it."""

    type: Literal["raise_limits"] = "raise_limits"
    limit: str
    scope: str = "run"
    spent: float = 0
    allowed: float = 0
    needed: float | None = None


class ApprovalCall(Model):
    """A gated tool call of an `approve_tool_calls` action: what the model asked for and
    the hash a decision names (`Approvals.approve` / `reject`)."""

    id: str
    name: str
    arguments: Any
    arguments_hash: str
    position: int | None = None  # its place in the round (older servers: absent)


class ApproveToolCalls(Model):
    """The run waits for decisions on `approvals`; `tool_calls` (not gated) are open to
    executors meanwhile, as in `SubmitToolResults`."""

    type: Literal["approve_tool_calls"] = "approve_tool_calls"
    approvals: list[ApprovalCall]
    tool_calls: list[ToolCall] = Field(default_factory=list)
    callback_url: str | None = None


class RequiredAction(Model):
    """A kind of required action this client does not know yet."""

    type: str


Action = Annotated[
    SubmitToolResults | ApproveToolCalls | ResolveInvalidToolCall | RaiseLimits | RequiredAction,
    Field(union_mode="left_to_right"),
]


class RunUsage(Model):
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0
    model_calls: int = 0
    cost_usd: float | None = None  # of the priced calls; None while none was


class AgentRef(Model):
    """The named agent (and version) a run started from."""

    name: str
    version: int


class ScheduleRef(Model):
    """The schedule tick that started a run: the schedule's `key` and the tick's
    `scheduled_time` (a trigger's: when it was triggered)."""

    key: str
    scheduled_time: datetime


class ForkedFrom(Model):
    """The run and checkpoint a fork was made from (`runs.fork`): `mode` `fork` or
    `replay`, and what a replay does at its first difference (`on_divergence`: `live`,
    `fail`)."""

    run_id: str
    checkpoint: int
    mode: str = "fork"
    on_divergence: str = "live"

    @property
    def is_replay(self) -> bool:
        return self.mode == "replay"


class Run(Model):
    id: str
    status: RunStatus
    turn: int
    max_turns: int
    required_action: Action | None = None
    waiting_reason: dict[str, Any] | None = None
    output: str | None = None
    usage: RunUsage | None = None
    limits: dict[str, Any] | None = None  # its budget (docs/reference.md, Budgets)
    error: dict[str, Any] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    model: dict[str, Any] = Field(default_factory=dict)
    attempts: int = 0
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None = None
    previous_run_id: str | None = None
    conversation_id: str | None = None  # the first run's id (its own unless it continues one)
    priority: int = 0  # claim order (docs/reference.md, Priority and fair share)
    queue: dict[str, Any] | None = None  # while queued: `position` and `reason`
    agent: AgentRef | None = None  # the named agent it started from
    schedule: ScheduleRef | None = None  # the schedule tick that started it
    forked_from: ForkedFrom | None = None  # the run and checkpoint it was forked from
    # Its place in a tree of runs (agent tools' calls start child runs):
    parent_run_id: str | None = None  # whose agent tool's call started it
    root_run_id: str | None = None  # its own id for a root (older servers: absent)
    depth: int = 0  # 0: a root
    parent_tool_call_id: str | None = None  # the parent's call it answers
    tree_usage: RunUsage | None = None  # on a single read in a tree: with its descendants'

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def pending_tool_calls(self) -> list[ToolCall]:
        """The tool calls that still wait for a result (empty unless suspended for tools;
        gated calls are not among them until approved)."""
        action = self.required_action
        if isinstance(action, SubmitToolResults | ApproveToolCalls):
            return [c for c in action.tool_calls if not c.answered]
        return []

    @property
    def pending_approvals(self) -> list[ApprovalCall]:
        """The gated tool calls that wait for a decision (`client.approvals`)."""
        action = self.required_action
        return list(action.approvals) if isinstance(action, ApproveToolCalls) else []


class Agent(Model):
    """One version of a named agent (`client.agents`): `spec` holds the fields its runs
    take (`model`, `preamble`, `tools`, `limits`, ...), as given."""

    name: str
    version: int
    description: str
    spec: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime
    created_by: str | None = None

    @property
    def ref(self) -> str:
        """`name@version`: what `agent=` takes to start runs from this very version."""
        return f"{self.name}@{self.version}"


class AgentPage(Model):
    data: list[Agent]
    next_cursor: str | None = None


class Schedule(Model):
    """A schedule (`client.schedules`): each tick of `cron` in `timezone` starts the run
    `run` describes (a run's create body, as given). `overlap`, `catchup` and the rest are
    as `ScheduleFields` says; `next_fire_at` is the next tick (UTC; None once there is
    none), `next_fire_at_local` the same time in `timezone`."""

    key: str
    cron: str
    timezone: str
    run: dict[str, Any] = Field(default_factory=dict)
    overlap: str  # skip | buffer_one | allow_all | cancel_other
    catchup: str  # skip | latest | all
    catchup_window_seconds: int
    jitter_seconds: int = 0
    start_at: datetime | None = None
    end_at: datetime | None = None
    paused: bool = False
    note: str | None = None  # why it is paused
    next_fire_at: datetime | None = None
    next_fire_at_local: datetime | None = None  # (with the zone's offset)
    buffered_time: datetime | None = None  # buffer_one: the tick that starts when the last run ends
    last_run_id: str | None = None  # the last run it started
    created_at: datetime
    created_by: str | None = None
    updated_at: datetime


class SchedulePage(Model):
    data: list[Schedule]
    next_cursor: str | None = None


class TickOutcome(Model):
    """What a trigger's or a backfill's tick became: `outcome` `started` (`run_id` is its
    run), `skipped` (`reason`, e.g. `overlap`: `run_id` is the run still going),
    `buffered` (it starts when `run_id` ends), `failed` (the run body was refused:
    `reason`), or `exists` (the tick had an outcome already: nothing done)."""

    scheduled_time: datetime
    outcome: str
    run_id: str | None = None
    reason: str | None = None

    @property
    def started(self) -> bool:
        return self.outcome == "started"


class TickOutcomeList(Model):
    data: list[TickOutcome]


class ScheduleTick(Model):
    """A tick as the schedule recorded it (`client.schedules.ticks`): its `source` (`cron`,
    `trigger`, `backfill`), `outcome` (`started`, `skipped`, `buffered`, `missed`,
    `failed`), `reason` (`overlap`, `buffer_full`, `catchup`, `catchup_window`, or why the
    run was refused) and `run_id`; a `missed` one stands for `count` ticks, from
    `scheduled_time` to `last_time`."""

    scheduled_time: datetime
    source: str
    outcome: str
    reason: str | None = None
    run_id: str | None = None
    count: int = 1
    last_time: datetime | None = None
    recorded_at: datetime


class ScheduleTickPage(Model):
    data: list[ScheduleTick]
    next_cursor: str | None = None  # `before` of the next (older) page


class FireTime(Model):
    """A time a schedule would fire: `utc`, and `local` (the same instant in the
    schedule's zone, with that zone's offset then)."""

    utc: datetime
    local: datetime


class FireTimeList(Model):
    timezone: str
    data: list[FireTime]


class LeasedCall(Model):
    """A tool call leased from a queue (`POST /v1/queues/{queue}/lease`)."""

    run_id: str
    tool_call_id: str  # the same on every lease of the call: an idempotency key
    name: str
    arguments: Any = None
    round: int
    attempt: int  # 1 for its first lease, 2 after one lapsed, ...
    lease_token: str
    lease_expires_at: datetime

    def as_tool_call(self) -> ToolCall:
        return ToolCall(id=self.tool_call_id, name=self.name, arguments=self.arguments)


class LeaseList(Model):
    calls: list[LeasedCall]


class LeaseExtended(Model):
    lease_token: str
    lease_expires_at: datetime


class RunPage(Model):
    data: list[Run]
    next_cursor: str | None = None


class Message(Model):
    """A message in the shape `history` takes on create: `role`, `content` (text, or the
    items: `text`, `image`, `toolcall`, `reasoning`, `toolresult`) and an assistant `id`."""

    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]]
    id: str | None = None

    def as_history(self) -> dict[str, Any]:
        """What `history=[...]` takes on create."""
        return self.model_dump(mode="json", include={"role", "content", "id"})


class ConversationMessage(Model):
    index: int
    from_history: bool  # given to the run (its history, or an earlier run's), not its own
    message: Message


class MessagePage(Model):
    data: list[ConversationMessage]
    next_cursor: str | None = None


class ToolResult(Model):
    """One answer to a tool call, as submitted."""

    tool_call_id: str
    output: Any
    is_error: bool = False


class SubmitOutcome(Model):
    run: Run
    accepted: list[str] = Field(description="tool call ids newly answered by this request")
    resumed: bool = Field(description="true when this request answered the last pending call")


class Checkpoint(Model):
    """A place in a run's conversation where it can be forked (`runs.checkpoints`): a fork
    at `seq` starts from the run's first `seq` messages. `kind`: `start` (the given history
    and the prompt), `tool_calls` (the model's calls end it: a fork there waits for their
    results again), `tool_results` (a round's results end it), `answer` (the model's
    message without calls ends it: a fork there needs a message appended). `turn`: the
    model calls made before it; `usage`: theirs."""

    seq: int
    kind: str
    turn: int
    usage: RunUsage = Field(default_factory=RunUsage)


class CheckpointList(Model):
    run_id: str
    messages: int  # in the run's conversation now
    data: list[Checkpoint]


class BrowserToken(Model):
    """A short-lived read-only token for one run (`Runs.browser_token`): hand `token` to
    a browser, which reads the run's events, wait and messages with it."""

    token: str
    run_id: str
    expires_at: datetime


class Event(Model):
    seq: int
    type: str
    data: dict[str, Any] = Field(default_factory=dict)
    actor: str | None = None
    created_at: datetime


class EventList(Model):
    data: list[Event]


class UsageTotals(Model):
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost_usd: float | None = None


class Usage(UsageTotals):
    model_config = ConfigDict(extra="allow", populate_by_name=True)
    from_: datetime = Field(alias="from")
    to: datetime
    by_status: dict[str, UsageTotals] = Field(default_factory=dict)
    by_model: dict[str, UsageTotals] = Field(default_factory=dict)


class FieldError(Model):
    """One item of a 422 problem's `errors`: where (`loc`, e.g. `["body", "prompt"]`) and
    what is wrong."""

    loc: list[str | int]
    msg: str
    type: str = ""


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    CLOSED = "closed"  # never decided: its run ended (cancelled, expired, failed)


class Approval(Model):
    """A gated tool call and its decision (`GET /v1/approvals`, `GET /v1/runs/{id}/approvals`):
    `arguments` the model's, `executed_arguments` the ones an approval with edits gave the
    executor."""

    run_id: str
    tool_call_id: str
    name: str
    arguments: Any = None
    arguments_hash: str
    status: ApprovalStatus | str = ApprovalStatus.PENDING
    round: int | None = None
    position: int | None = None  # its place in the round
    executed_arguments: Any = None
    message: str | None = None  # a rejection's, as the model receives it
    requested_at: datetime | None = None  # when the call was gated
    due_at: datetime | None = None  # when the run's `approval_on_timeout` decides it
    decided_by: str | None = None
    decided_at: datetime | None = None

    @property
    def is_pending(self) -> bool:
        return self.status == ApprovalStatus.PENDING


class ApprovalPage(Model):
    data: list[Approval]
    next_cursor: str | None = None
