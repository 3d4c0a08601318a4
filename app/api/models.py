"""Response bodies of the HTTP API (distinct from the core's types, mapped here)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from app.core.lifecycle import RunStatus
from app.service import convert, lineage
from app.service.messages import Entry
from app.service.principals import without_callback
from app.service.runs import RunView
from app.service.types import APPROVAL_APPROVED, Approval, Budget, EventRecord
from app.timestamps import Timestamp


class ToolCallOut(BaseModel):
    id: str
    name: str
    arguments: Any
    answered: bool = False
    queue: str | None = Field(
        default=None, description="the queue whose executors lease this call, if any"
    )


class SubmitToolResults(BaseModel):
    type: Literal["submit_tool_results"] = "submit_tool_results"
    tool_calls: list[ToolCallOut]
    callback_url: str | None


class ApprovalItem(BaseModel):
    id: str
    name: str
    arguments: Any = Field(description="the model's arguments")
    arguments_hash: str = Field(
        description="SHA-256 (hex) of `arguments` as compact JSON with sorted keys: "
        "a decision names it"
    )
    position: int = Field(
        description="the call's place in its round (a decision may name it: needed when "
        "two calls of the round share an id)"
    )


class ApproveToolCalls(BaseModel):
    type: Literal["approve_tool_calls"] = "approve_tool_calls"
    approvals: list[ApprovalItem] = Field(description="gated calls awaiting a decision")
    tool_calls: list[ToolCallOut] = Field(
        description="the round's calls handed out meanwhile (as in `submit_tool_results`)"
    )
    callback_url: str | None


class ResolveInvalidToolCall(BaseModel):
    type: Literal["resolve_invalid_tool_call"] = "resolve_invalid_tool_call"
    tool_name: str
    tool_call_id: str | None
    arguments: str


class RaiseLimits(BaseModel):
    type: Literal["raise_limits"] = "raise_limits"
    limit: str = Field(description="the limit the next model call could pass")
    scope: str = Field(
        description="whose limit: `run`, `tenant`, `deployment` or `tree` (the root's limits, "
        "which cover its descendants: raise them on the root)"
    )
    spent: float
    allowed: float
    needed: float | None = Field(description="the least the next call needs, where known")


class RunOut(BaseModel):
    id: str
    status: RunStatus
    turn: int
    max_turns: int
    required_action: (
        SubmitToolResults | ApproveToolCalls | ResolveInvalidToolCall | RaiseLimits | None
    ) = Field(default=None, discriminator="type")
    waiting_reason: dict[str, Any] | None
    output: str | None
    usage: dict[str, Any] | None
    limits: dict[str, Any] | None = Field(
        default=None, description="the run's budget (`limits` at create, as changed since)"
    )
    error: dict[str, Any] | None
    metadata: dict[str, Any]
    model: dict[str, Any]
    attempts: int
    created_at: Timestamp
    updated_at: Timestamp
    expires_at: Timestamp | None
    previous_run_id: str | None = Field(
        default=None, description="the run this one continues (`previous_run_id` on create)"
    )
    conversation_id: str = Field(
        description="the first run of this run's conversation (its own id unless it continues one)"
    )
    agent: dict[str, Any] | None = Field(
        default=None,
        description='the named agent the run started from: `{"name", "version"}`',
    )
    schedule: dict[str, Any] | None = Field(
        default=None,
        description='the schedule tick that started the run: `{"key", "scheduled_time"}`',
    )
    origin: dict[str, Any] | None = Field(
        default=None,
        description='the open protocol the run was started over: `{"protocol": "a2a", '
        '"message_id"}` or `{"protocol": "ag-ui", "thread_id", "run_id"}`; `null` for the API',
    )
    forked_from: dict[str, Any] | None = Field(
        default=None,
        description='the run and checkpoint this fork was made from: `{"run_id", "checkpoint", '
        '"mode", "on_divergence"}` (`POST /v1/runs/{id}/fork`); `null` for other runs',
    )
    parent_run_id: str | None = Field(
        default=None, description="a child run's parent (whose agent tool's call started it)"
    )
    root_run_id: str = Field(
        default="", description="the root of the run's tree (its own id unless it is a child)"
    )
    depth: int = Field(default=0, description="its depth in its tree (0: a root)")
    parent_tool_call_id: str | None = Field(
        default=None, description="the parent's call this child run answers"
    )
    tree_usage: dict[str, Any] | None = Field(
        default=None,
        description="on a read of one run that is part of a tree: its usage added to its "
        "descendants' (exact to the token; `usage` is its own)",
    )
    priority: int = Field(default=0, description="claim order: higher first (-100..100)")
    queue: dict[str, Any] | None = Field(
        default=None,
        description="a queued run's place, on a read of the run: `position` (how many due "
        "runs the claim takes first), `ahead_higher_priority`, `reason` (`next`, "
        "`higher_priority`, `fair_share`, `not_due`) and `available_at`",
    )

    @classmethod
    def of(cls, view: RunView, *, callbacks: bool = True) -> RunOut:
        """`callbacks`: whether the caller is shown the callback URL
        (`app.tenancy.access.sees_callbacks`); `callback_url` is null otherwise."""
        r = view.record
        action: (
            SubmitToolResults | ApproveToolCalls | ResolveInvalidToolCall | RaiseLimits | None
        ) = None
        if view.callback_url is not None:
            # (Gated calls are not handed out: awaiting a decision, or rejected.)
            calls = [
                ToolCallOut(
                    id=c.call_id,
                    name=c.name,
                    arguments=c.executes,
                    answered=c.result_hash is not None,
                    queue=c.queue,
                )
                for c in view.pending
                if not c.preresolved
                and c.approval in (None, APPROVAL_APPROVED)
                and c.child_run_id is None  # (an agent tool's: its child run answers it)
            ]
            url = view.callback_url if callbacks else None
            if isinstance(r.waiting, Approval):
                approvals = [  # (the hash: app.approvals.policies.arguments_hash's)
                    ApprovalItem(
                        id=c.call_id,
                        name=c.name,
                        arguments=c.arguments,
                        arguments_hash=convert.canonical_hash(c.arguments),
                        position=c.position,
                    )
                    for c in view.pending
                    if c.awaits_approval
                ]
                action = ApproveToolCalls(approvals=approvals, tool_calls=calls, callback_url=url)
            elif calls:  # (none: it waits on its child runs only)
                action = SubmitToolResults(tool_calls=calls, callback_url=url)
        elif view.resolution is not None:
            action = ResolveInvalidToolCall(
                tool_name=view.resolution.tool_name,
                tool_call_id=view.resolution.tool_call_id,
                arguments=view.resolution.arguments,
            )
        elif r.status == RunStatus.REQUIRES_ACTION and isinstance(r.waiting, Budget):
            w = r.waiting
            action = RaiseLimits(
                limit=w.limit, scope=w.scope, spent=w.spent, allowed=w.allowed, needed=w.needed
            )
        return cls(
            id=r.id,
            status=r.status,
            turn=r.turn,
            max_turns=r.max_turns,
            required_action=action,
            waiting_reason=r.waiting_reason,
            output=r.output,
            usage=r.usage,
            limits=r.limits,
            error=r.error,
            metadata=r.metadata,
            model=r.config.get("model", {}),
            attempts=r.attempts,
            created_at=r.created_at,
            updated_at=r.updated_at,
            expires_at=r.expires_at if r.status == RunStatus.REQUIRES_ACTION else None,
            previous_run_id=lineage.previous_of(r),
            conversation_id=lineage.conversation_of(r),
            agent=lineage.agent_of(r),
            schedule=lineage.schedule_of(r),
            origin=lineage.origin_of(r),
            forked_from=lineage.forked_from(r),
            **lineage.tree_of(r),
            tree_usage=view.tree_usage,
            priority=r.priority,
            queue=view.queue,
        )


class RunList(BaseModel):
    data: list[RunOut]
    next_cursor: str | None


class ToolResultsOut(BaseModel):
    run: RunOut
    accepted: list[str] = Field(description="tool call ids newly answered by this request")
    resumed: bool = Field(description="true when this request answered the last pending call")


class EventOut(BaseModel):
    run_id: str = Field(description="the run whose event it is (with `tree=true`, one of many)")
    seq: int
    type: str
    data: dict[str, Any]
    actor: str | None
    created_at: Timestamp

    @classmethod
    def of(cls, e: EventRecord, *, callbacks: bool = True) -> EventOut:
        data = e.data if callbacks else without_callback(e.data)
        return cls(
            run_id=e.run_id,
            seq=e.seq,
            type=e.type,
            data=data,
            actor=e.actor,
            created_at=e.created_at,
        )


class EventList(BaseModel):
    data: list[EventOut]
    next_cursor: str | None = Field(
        default=None,
        description="with `tree=true`: the `cursor` that continues after this page (also "
        "after the last one so far: fewer than `limit` events); null without it",
    )


class HistoryMessageOut(BaseModel):
    """A message in the shape `history` takes on `POST /v1/runs` (it can be sent back)."""

    role: Literal["system", "user", "assistant"]
    content: str | list[dict[str, Any]] = Field(
        description="text (system) or the message's items: `text`, `image`, `toolcall` "
        "and `reasoning` (assistant), `text`, `image` and `toolresult` (user)"
    )
    id: str | None = Field(default=None, description="the provider's message id (assistant)")


class ConversationMessageOut(BaseModel):
    index: int = Field(description="the message's position in the conversation, from 0")
    from_history: bool = Field(
        description="true for messages the run was given (its `history`, or the "
        "conversation of the run it continues), false for its own (its prompt, the model's "
        "answers, tool results)"
    )
    message: HistoryMessageOut

    @classmethod
    def of(cls, e: Entry) -> ConversationMessageOut:
        return cls(
            index=e.index,
            from_history=e.from_history,
            message=HistoryMessageOut.model_validate(e.message),
        )


class MessageList(BaseModel):
    data: list[ConversationMessageOut]
    next_cursor: str | None


class Health(BaseModel):
    status: Literal["ok"]


class UsageTotals(BaseModel):
    calls: int = Field(description="model call attempts, failed ones included")
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cached_input_tokens: int
    reasoning_tokens: int
    total_tokens: int
    cost_usd: float | None = Field(description="null when no price is configured")


class UsageOut(UsageTotals):
    model_config = {"populate_by_name": True}
    from_: Timestamp = Field(alias="from")
    to: Timestamp
    by_status: dict[str, UsageTotals] = Field(description="by the run's current status")
    by_model: dict[str, UsageTotals] = Field(description="keyed by provider:model")
