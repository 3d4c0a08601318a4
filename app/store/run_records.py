"""Plain records the store hands out (no ORM objects leave the store)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import ApprovalStatus, RunStatus
from app.core.stored import Snapshot
from app.store import waiting
from app.store.config import RunConfig
from app.store.schema import DEFAULT_TENANT, runs
from app.store.waiting import Approval, ToolResults, Waiting

#: The counters of a run's billed usage (`runs.usage`), stored without those at zero.
RUN_USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "model_calls",  # (calls answered: the budget's `max_model_calls` counts them)
)
#: A run's usage as read: every counter, and `cost_usd` (its priced calls' sum; null
#: while none was priced).
_NO_USAGE: dict[str, Any] = {**dict.fromkeys(RUN_USAGE_KEYS, 0), "cost_usd": None}

#: `tool_calls.approval` of a gated call: awaiting a decision, approved, rejected.
APPROVAL_PENDING = ApprovalStatus.PENDING.value
APPROVAL_APPROVED = ApprovalStatus.APPROVED.value
APPROVAL_REJECTED = ApprovalStatus.REJECTED.value


def _keys(prefix: str) -> dict[str, str]:
    """The key of each of a run record's columns in a row that names them with `prefix`
    (`runs.*`, then `config` and `metadata`: `app.store.schema.select_runs`)."""
    names = [*(c.name for c in runs.columns), "config", "metadata"]
    return {name: prefix + name for name in names}


_RUN_KEYS = {prefix: _keys(prefix) for prefix in ("", "n_")}


def utc(value: datetime | None) -> datetime | None:
    """SQLite hands timestamps back naive; everything we store is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RunRecord:
    id: str
    status: RunStatus
    state: str
    schema_version: int
    version: int
    lease_owner: str | None
    lease_expires_at: datetime | None
    attempts: int
    model_attempts: int
    model_retry_since: datetime | None
    available_at: datetime
    expires_at: datetime | None
    idempotency_key: str | None
    request_hash: str | None
    config: dict[str, Any]  # the document as stored (what the API shows)
    metadata: dict[str, Any]
    waiting: Waiting | None  # why it is where it is (`waiting_reason`, typed)
    turn: int
    max_turns: int
    output: str | None
    error: dict[str, Any] | None
    usage: dict[str, Any] | None
    last_event_seq: int
    created_at: datetime
    updated_at: datetime
    tenant_id: str = DEFAULT_TENANT  # whose run it is
    limits: dict[str, Any] | None = None  # its budget (app.limits.rules), if any
    awaited_by: str | None = None  # the run waiting for it to end (`if_busy: enqueue`)
    flow_reserved_at: datetime | None = None  # a shared-limit reservation (app.limits.rates_sql)
    priority: int = 0  # claim order: higher first (-100..100)
    fair_key: str = ""  # whose turn it takes within its priority (app.service.fairness)
    fair_rank: int = 0  # its turn: start-time fair queuing rank, set at enqueue
    # The run's log (`app.core.stored`: its batches as one JSON array text) when the read
    # asked for it: to load the run whole.
    log: str | None = None
    # The calls of the round at its turn, when a claim read them with the run: a run
    # resumed by its round's answers is fed them (`app.service.recorded`).
    round_calls: tuple[ToolCallRecord, ...] | None = None
    _config: RunConfig | None = dataclasses.field(default=None, repr=False, compare=False)

    def with_log(self, log: str | None) -> RunRecord:
        return dataclasses.replace(self, log=log)

    def with_calls(self, calls: Iterable[Any]) -> RunRecord:
        """This record with the rows of its round at its turn (`ToolCallRecord`s, or the
        JSON objects of them)."""
        rows = (c if isinstance(c, ToolCallRecord) else ToolCallRecord.from_row(c) for c in calls)
        return dataclasses.replace(self, round_calls=tuple(rows))

    @property
    def waiting_reason(self) -> dict[str, Any] | None:
        """The waiting reason as the API shows it (`doc()` of `waiting`)."""
        return None if self.waiting is None else self.waiting.doc()

    @property
    def waiting_round(self) -> int | None:
        """The round of tool calls the run waits on for results, if it does."""
        reason = self.waiting
        if self.status is RunStatus.REQUIRES_ACTION and isinstance(reason, ToolResults | Approval):
            return reason.round
        return None

    @property
    def run_config(self) -> RunConfig:
        """The configuration, typed (parsed on first use: only the worker needs it)."""
        if self._config is None:
            object.__setattr__(self, "_config", RunConfig.parse(self.config))
        return self._config  # type: ignore[return-value]

    @classmethod
    def from_row(
        cls,
        v: Mapping[Any, Any],
        *,
        prefix: str = "",
        log: str | None = None,
        known: RunRecord | None = None,
    ) -> RunRecord:
        """From a row naming the runs table's columns, the run's config and metadata
        (`select_runs()`, and the changes' statements), each with `prefix`; `known`: a
        record of this run whose config and metadata the row leaves out (they never
        change). A SQLAlchemy row is read through its mapping."""
        if isinstance(v, sa.Row):
            v = v._mapping
        c = _RUN_KEYS[prefix]
        status = RunStatus(v[c["status"]])
        lease_owner, lease_expires_at = v[c["lease_owner"]], utc(v[c["lease_expires_at"]])
        doc = v[c["waiting_reason"]]
        if doc is None:
            reason = waiting.derived(status, lease_owner, lease_expires_at)
        else:
            reason = waiting.parse(doc)
        usage = v[c["usage"]]
        if type(usage) is dict:
            usage = {**_NO_USAGE, **usage}
        if known is None:
            config, metadata = v[c["config"]], v[c["metadata"]]
        else:
            config, metadata = known.config, known.metadata
        return cls(
            id=v[c["id"]],
            status=status,
            state=v[c["state"]],
            schema_version=v[c["schema_version"]],
            version=v[c["version"]],
            lease_owner=lease_owner,
            lease_expires_at=lease_expires_at,
            attempts=v[c["attempts"]],
            model_attempts=v[c["model_attempts"]],
            model_retry_since=utc(v[c["model_retry_since"]]),
            available_at=utc(v[c["available_at"]]),  # type: ignore[arg-type]
            expires_at=utc(v[c["expires_at"]]),
            idempotency_key=v[c["idempotency_key"]],
            request_hash=v[c["request_hash"]],
            config=config,
            metadata=metadata,
            waiting=reason,
            turn=v[c["turn"]],
            max_turns=v[c["max_turns"]],
            output=v[c["output"]],
            error=v[c["error"]],
            usage=usage,
            last_event_seq=v[c["last_event_seq"]],
            created_at=utc(v[c["created_at"]]),  # type: ignore[arg-type]
            updated_at=utc(v[c["updated_at"]]),  # type: ignore[arg-type]
            tenant_id=v[c["tenant_id"]],
            limits=v[c["limits"]],
            awaited_by=v[c["awaited_by"]],
            flow_reserved_at=utc(v[c["flow_reserved_at"]]),
            priority=v.get(c["priority"], 0),
            fair_key=v.get(c["fair_key"], ""),
            fair_rank=v.get(c["fair_rank"], 0),
            log=log,
            _config=None if known is None else known._config,
        )


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    run_id: str
    round: int
    position: int
    call_id: str
    name: str
    arguments: Any
    preresolved: bool
    result: Any
    result_hash: str | None
    submitted_at: datetime | None
    queue: str | None = None  # the executors' queue that leases it (app.toolqueue.sql)
    lease_owner: str | None = None
    lease_token: str | None = None
    lease_expires_at: datetime | None = None  # a call never leased: when it was offered
    attempts: int = 0  # leases it has had
    tenant_id: str = DEFAULT_TENANT  # its run's (a queue is per tenant)
    # A gated call (app.approvals.policies): its `ApprovalStatus`; None: not gated.
    approval: str | None = None
    executed_arguments: Any = None  # approved with edited arguments: the ones executed
    approval_requested_at: datetime | None = None
    approval_due_at: datetime | None = None  # its run's `approval_timeout` passes
    decided_by: str | None = None
    decided_at: datetime | None = None
    child_run_id: str | None = None  # an agent tool's call: the child run that answers it

    @property
    def executes(self) -> Any:
        """The arguments an executor is given: the edited ones, else the model's."""
        return self.arguments if self.executed_arguments is None else self.executed_arguments

    @property
    def awaits_approval(self) -> bool:
        return self.approval == APPROVAL_PENDING

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> ToolCallRecord:
        """From a row naming the `tool_calls` columns, or from the JSON object of one
        (timestamps as text)."""
        submitted_at = _instant(m["submitted_at"])
        approval = m.get("approval")
        if approval is not None:  # (a gated call: rare, so a call that is not pays nothing)
            return cls._gated(m, approval)
        return cls(
            run_id=m["run_id"],
            round=m["round"],
            position=m["position"],
            call_id=m["call_id"],
            name=m["name"],
            arguments=m["arguments"],
            preresolved=m["preresolved"],
            result=m["result"],
            result_hash=m["result_hash"],
            submitted_at=utc(submitted_at),
            queue=m["queue"],
            lease_owner=m["lease_owner"],
            lease_token=m["lease_token"],
            lease_expires_at=utc(_instant(m["lease_expires_at"])),
            attempts=m["attempts"],
            tenant_id=m.get("tenant_id", DEFAULT_TENANT),
            child_run_id=m.get("child_run_id"),
        )

    @classmethod
    def _gated(cls, m: Mapping[Any, Any], approval: str) -> ToolCallRecord:
        plain = cls.from_row({**m, "approval": None})
        return dataclasses.replace(
            plain,
            approval=approval,
            executed_arguments=m.get("executed_arguments"),
            approval_requested_at=utc(_instant(m.get("approval_requested_at"))),
            approval_due_at=utc(_instant(m.get("approval_due_at"))),
            decided_by=m.get("decided_by"),
            decided_at=utc(_instant(m.get("decided_at"))),
        )


def _instant(value: Any) -> datetime | None:
    """A timestamp of a row, or of a row's JSON object (as text there)."""
    return datetime.fromisoformat(value) if isinstance(value, str) else value


@dataclass(frozen=True, slots=True)
class EventRecord:
    run_id: str
    seq: int
    type: str
    data: dict[str, Any]
    actor: str | None
    created_at: datetime

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> EventRecord:
        """From a row naming the `run_events` columns."""
        return cls(
            run_id=m["run_id"],
            seq=m["seq"],
            type=m["type"],
            data=m["data"],
            actor=m["actor"],
            created_at=utc(m["created_at"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True, slots=True)
class NewEvent:
    type: str  # an `app.core.events.EventType`
    data: dict[str, Any]
    actor: str | None = None

    def __post_init__(self) -> None:
        # Stored and compared as plain text (drivers need not know the enum).
        object.__setattr__(self, "type", str(self.type))


@dataclass(frozen=True, slots=True)
class SpawnedRun:
    """A child run a suspension creates in its own transaction (`Change.spawns`): its
    columns, configuration and metadata as a create builds them (`RunService.prepare`),
    its first events and log."""

    values: Mapping[str, Any]
    events: tuple[NewEvent, ...]
    snapshot: Snapshot


@dataclass(frozen=True, slots=True)
class NewToolCall:
    position: int
    call_id: str
    name: str
    arguments: Any
    preresolved_result: Any = None  # set for calls the run answered itself
    queue: str | None = None  # the queue whose executors lease it (none for preresolved)
    # A gated call: `pending` (no executor sees it until approved), its deadline.
    approval: str | None = None
    approval_due_at: datetime | None = None
    # An agent tool's call: the child run (created in the suspension's transaction) whose
    # outcome answers it; no executor is handed it.
    child_run_id: str | None = None

    @property
    def for_executor(self) -> bool:
        """Whether an executor owes its result (not the run's own, not gated, no child's)."""
        return self.preresolved_result is None and self.approval is None and not self.child_run_id


@dataclass(frozen=True, slots=True)
class WebhookRecord:
    id: int
    run_id: str
    event_seq: int
    event_type: str
    webhook_id: str
    url: str
    payload: dict[str, Any]
    status: str
    attempts: int
    next_attempt_at: datetime
    last_status: int | None
    last_error: str | None
    last_latency_ms: float | None
    created_at: datetime
    delivered_at: datetime | None

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> WebhookRecord:
        """From a row naming the `webhook_outbox` columns."""
        return cls(
            id=m["id"],
            run_id=m["run_id"],
            event_seq=m["event_seq"],
            event_type=m["event_type"],
            webhook_id=m["webhook_id"],
            url=m["url"],
            payload=m["payload"],
            status=m["status"],
            attempts=m["attempts"],
            next_attempt_at=utc(m["next_attempt_at"]),  # type: ignore[arg-type]
            last_status=m["last_status"],
            last_error=m["last_error"],
            last_latency_ms=m["last_latency_ms"],
            created_at=utc(m["created_at"]),  # type: ignore[arg-type]
            delivered_at=utc(m["delivered_at"]),
        )
