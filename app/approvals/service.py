"""Decisions on gated tool calls: who wins, and what each writes.

A run whose approval policies gated some calls of a round waits (`requires_action`, an
`approval` reason) with those calls hidden from every executor. A decision names the call
and the hash of the arguments it saw (`app.approvals.policies.arguments_hash`):

- approve: the call is handed out (a new `run.requires_action` listing the released calls,
  with the round's callback URL; its queue may lease it), with the person's edited
  arguments if given (validated against the tool's `parameters`);
- reject: the call's result is `{"output": message, "is_error": true}`, as if submitted.

A stale hash is refused (409 `approval-stale`); the same decision again changes nothing,
also once the run moved on (the call looked up by id and hash in any round); a different
one for a decided call is refused (409 `approval-conflict`). A decision addresses one call:
when two calls of the round share an id it names the call's `position` (else 422). When no decision
and no result is left to wait for, the run resumes with its results. As a submission, a
decision reads the run, decides here (pure), and writes one compare-and-set on the version
read (`app.approvals.rows`); a concurrent change moves the version: read and decide again.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app import tracing
from app.approvals import policies
from app.approvals.inbox import CallKey, Context, InboxFilter, InboxRow, contexts_of
from app.approvals.rows import Approvals, CallDecision
from app.core.events import EventType as E
from app.core.lifecycle import TERMINAL, ApprovalStatus, RunStatus
from app.core.scope import Scope
from app.service import convert
from app.service.errors import (
    ApprovalConflict,
    ApprovalStale,
    InvalidRequest,
    RunNotFound,
    RunStateConflict,
    ToolCallNotPending,
)
from app.service.runs import RunService, RunView
from app.service.schemas import DecisionIn, DecisionsIn
from app.service.submissions import (
    SUBMIT_ATTEMPTS,
    open_call_ids,
    still_waiting,
)
from app.service.tokens import callback_token
from app.store import changes
from app.store.changes import Change
from app.store.errors import NotFoundError
from app.store.run_records import (
    APPROVAL_APPROVED,
    APPROVAL_REJECTED,
    NewEvent,
    RunRecord,
    ToolCallRecord,
)

#: What the model is told of a call rejected without a message.
REJECTED = "The tool call was rejected."


@dataclass(frozen=True, slots=True)
class Decision:
    call_id: str
    arguments_hash: str
    action: str  # approve | reject
    message: str | None = None
    arguments: Any = None  # approve: the edited arguments
    actor: str | None = None
    position: int | None = None  # the call's place in its round (two calls, one id)

    @classmethod
    def of(cls, body: DecisionIn, actor: str | None) -> Decision:
        return cls(
            body.tool_call_id,
            body.arguments_hash,
            body.action,
            body.message,
            body.arguments,
            actor,
            body.position,
        )

    def result(self) -> dict[str, Any]:
        return {"output": REJECTED if self.message is None else self.message, "is_error": True}

    def names(self, call: ToolCallRecord) -> bool:
        """Whether this decision addresses `call` (by id, and position when given)."""
        return call.call_id == self.call_id and self.position in (None, call.position)

    def same(self, other: Decision) -> bool:
        """The same decision (another actor making it changes nothing)."""
        return dataclasses.replace(other, actor=self.actor) == self


def same_decision(call: ToolCallRecord, d: Decision) -> bool:
    """Whether `d` is the decision `call` already had."""
    if d.action == "approve":
        return call.approval == APPROVAL_APPROVED and convert.canonical_hash(
            call.executed_arguments
        ) == convert.canonical_hash(d.arguments)
    return call.approval == APPROVAL_REJECTED and call.result == d.result()


def check_replayed(gated: Sequence[ToolCallRecord], d: Decision) -> None:
    """A decision for calls decided already (in any round): looked up by id and hash,
    the same again passes (nothing to do), another is refused."""
    named = [c for c in gated if d.names(c) and c.approval is not None]
    seen = [c for c in named if policies.arguments_hash(c.arguments) == d.arguments_hash]
    if not seen:
        raise ApprovalStale(
            f"tool call {d.call_id!r} has other arguments than the hash names",
            tool_call_id=d.call_id,
        )
    if not any(same_decision(c, d) for c in seen if not c.awaits_approval):
        raise ApprovalConflict(
            f"tool call {d.call_id!r} was already decided otherwise", tool_call_id=d.call_id
        )


def is_fresh(calls: Sequence[ToolCallRecord], d: Decision) -> bool:
    """Whether `d` addresses a call of the waiting round that awaits a decision."""
    return any(d.names(c) and c.awaits_approval for c in calls)


def decide(
    record: RunRecord,
    calls: list[ToolCallRecord],
    decisions: Sequence[Decision],
    now: datetime,
    callback_url: str | None,
) -> tuple[Change, list[CallDecision]] | None:
    """The change the decisions (each for a call of the waiting round that awaits one:
    `is_fresh`) make to the run as read and their calls' writes; None when there are
    none; or a refusal (raised)."""
    round = record.waiting_round
    if round is None:
        raise RunStateConflict(
            f"run {record.id} is {record.status.value}, not waiting for approvals",
            record.status.value,
        )
    config = record.run_config
    chosen: dict[int, tuple[ToolCallRecord, Decision]] = {}
    for d in decisions:
        named = [c for c in calls if d.names(c) and c.approval is not None]
        if len(named) > 1:
            raise InvalidRequest(
                f"{len(named)} gated calls of the round have the id {d.call_id!r}: "
                "name the one decided by its `position`"
            )
        if not named:
            raise ToolCallNotPending(
                f"tool call {d.call_id!r} awaits no approval on this run", tool_call_id=d.call_id
            )
        (call,) = named
        if call.position in chosen:
            if chosen[call.position][1].same(d):
                continue  # (the same decision twice in one request)
            raise InvalidRequest(f"two different decisions for tool call {d.call_id!r}")
        if not call.awaits_approval:
            check_replayed([call], d)
            continue
        if policies.arguments_hash(call.arguments) != d.arguments_hash:
            raise ApprovalStale(
                f"tool call {d.call_id!r} has other arguments than the hash names",
                tool_call_id=d.call_id,
            )
        if d.arguments is not None:
            tool = config.tool(call.name)
            policies.check_arguments(tool.parameters if tool else {}, d.arguments, call.name)
        chosen[call.position] = (call, d)
    if not chosen:
        return None
    writes, events, released = [], [], []
    rejected: set[int] = set()
    for position, (call, d) in chosen.items():
        if d.action == "approve":
            queue = config.queue_of(call.name)
            writes.append(
                CallDecision(round, position, APPROVAL_APPROVED, d.actor, d.arguments, queue)
            )
            data = {"tool_call_id": call.call_id, "round": round, "name": call.name}
            data |= {"arguments": call.arguments, "arguments_hash": d.arguments_hash}
            if d.arguments is not None:
                data["executed_arguments"] = d.arguments
            events.append(NewEvent(E.TOOL_CALL_APPROVED, data, d.actor))
            shown = {"id": call.call_id, "name": call.name}
            shown["arguments"] = call.arguments if d.arguments is None else d.arguments
            released.append(shown | ({"queue": queue} if queue is not None else {}))
        else:
            result = d.result()
            digest = convert.canonical_hash(result)
            writes.append(
                CallDecision(
                    round, position, APPROVAL_REJECTED, d.actor, None, None, result, digest
                )
            )
            rejected.add(position)
            data = {"tool_call_id": call.call_id, "round": round, "name": call.name}
            events.append(
                NewEvent(E.TOOL_CALL_REJECTED, data | {"message": result["output"]}, d.actor)
            )
    awaiting = [c.call_id for c in calls if c.awaits_approval and c.position not in chosen]
    open_ids = open_call_ids(calls, rejected, chosen)
    if released:
        data = {"round": round, "tool_calls": released, "callback_url": callback_url}
        events.append(NewEvent(E.RUN_REQUIRES_ACTION, data, decisions[0].actor))
    if open_ids or awaiting:
        waiting = still_waiting(round, open_ids, awaiting)
        return changes.decide(record.version, waiting, events), writes
    change = changes.resume(record.version, now, events, actor=decisions[0].actor, round=round)
    return change, writes


# --- pages of approvals ----------------------------------------------------------------------


def encode_cursor(call: ToolCallRecord) -> str:
    assert call.approval_requested_at is not None
    raw = f"{call.approval_requested_at.isoformat()}|{call.run_id}|{call.round}|{call.position}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str, int, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        at, run_id, round, position = raw.split("|")
        when = datetime.fromisoformat(at)
        if when.tzinfo is None:
            raise ValueError(at)
        # (In UTC, and within what PostgreSQL's timestamps hold: year 1 to 9999 there.)
        when = when.astimezone(UTC)
        key = (when, run_id, int(round), int(position))
    except (ValueError, UnicodeDecodeError, OverflowError):
        raise InvalidRequest("cursor is malformed") from None
    if not run_id or len(run_id) > 40 or "\x00" in run_id:
        raise InvalidRequest("cursor is malformed")
    if not (0 <= key[2] < 2**31 and 0 <= key[3] < 2**31):
        raise InvalidRequest("cursor is malformed")
    return key


class ApprovalService:
    """The approvals of runs: decisions, a tenant's inbox, a run's, and the timeout sweep."""

    def __init__(self, service: RunService) -> None:
        self.service = service
        self.store = service.store
        self.clock = service.clock
        self.rows = Approvals(service.store.backend)  # (its SQL; the store knows none)

    async def decide(
        self, run_id: str, body: DecisionsIn, *, actor: str | None, scope: Scope
    ) -> RunView:
        decisions = [Decision.of(d, actor) for d in body.decisions]
        started = tracing.start_time()
        record = await self._decide(run_id, decisions, scope)
        tracing.record_span(
            "agentrun.run.decide_approvals",
            record.config,
            started,
            lambda: {
                **tracing.run_attributes(record, actor),
                "agentrun.approvals.decided": len(decisions),
            },
        )
        return await self.service.view(record)

    async def _decide(self, run_id: str, decisions: Sequence[Decision], scope: Scope) -> RunRecord:
        key = await self.service.callback_key()
        for _ in range(SUBMIT_ATTEMPTS):
            try:
                pending = await self.store.pending(run_id=run_id, scope=scope)
            except NotFoundError:
                raise RunNotFound(f"no run with id {run_id}") from None
            record, round = pending.record, pending.record.waiting_round
            current = pending.calls if round is not None else []
            fresh = [d for d in decisions if is_fresh(current, d)]
            if len(fresh) < len(decisions):  # (decided already: in this round or another)
                await self._replayed(record, [d for d in decisions if d not in fresh])
            if not fresh:
                return record
            assert round is not None  # (fresh decisions name calls of the waiting round)
            url = self.service.settings.callback_url(callback_token(key, record.id, round))
            decided = decide(record, pending.calls, fresh, self.clock.now(), url)
            if decided is None:
                return record
            change, writes = decided
            updated = await self.rows.decide(record, change, writes, self.clock.now())
            if updated is not None:
                return updated
        raise RunStateConflict(f"run {run_id} kept changing; try again", record.status.value)

    async def _replayed(self, record: RunRecord, decisions: Sequence[Decision]) -> None:
        """Decisions naming no call that awaits one: each must be one a gated call of the
        run (any round) already had, by id and hash (a retry: 200, nothing written); a
        different one is `approval-conflict`, another hash `approval-stale`; an id of no
        gated call `tool-call-not-pending` (waiting) or `run-state-conflict` (not)."""
        calls = await self.rows.of_run(record.id)
        for d in decisions:
            named = [c for c in calls if d.names(c)]
            if all(c.awaits_approval for c in named):  # (none, or left undecided: run ended)
                if record.waiting_round is None:
                    raise RunStateConflict(
                        f"run {record.id} is {record.status.value}, not waiting for approvals",
                        record.status.value,
                    )
                raise ToolCallNotPending(
                    f"tool call {d.call_id!r} awaits no approval on this run",
                    tool_call_id=d.call_id,
                )
            check_replayed(calls, d)

    async def pending(
        self, *, tenant: str, limit: int, cursor: str | None
    ) -> tuple[list[ToolCallRecord], str | None]:
        """A page of `tenant`'s pending approvals, newest first."""
        before = decode_cursor(cursor) if cursor else None
        calls = await self.rows.awaiting(tenant, limit + 1, before)
        more = len(calls) > limit
        calls = calls[:limit]
        return calls, (encode_cursor(calls[-1]) if more and calls else None)

    async def inbox(
        self, f: InboxFilter, *, limit: int, cursor: str | None
    ) -> tuple[list[InboxRow], str | None]:
        """A page of the dashboard's inbox: the pending approvals `f` names, newest first,
        each with its run's agent."""
        before = decode_cursor(cursor) if cursor else None
        rows = await self.rows.inbox(f.scope, limit + 1, tool=f.tool, agent=f.agent, before=before)
        more = len(rows) > limit
        rows = rows[:limit]
        return rows, (encode_cursor(rows[-1].call) if more and rows else None)

    async def contexts(self, calls: Sequence[ToolCallRecord]) -> dict[str, Context]:
        """What the inbox shows of each call's run (`app.approvals.inbox`), keyed by run
        id: two reads for all of them."""
        rounds = sorted({(c.run_id, c.round) for c in calls})
        batches = await self.rows.log_ends([run_id for run_id, _ in rounds])
        return contexts_of(batches, await self.rows.rounds(rounds))

    async def named(
        self, keys: Sequence[CallKey], *, scope: Scope
    ) -> list[tuple[ToolCallRecord, bool]]:
        """The gated calls of `keys` (run id, round, position) in `scope`, each with
        whether it still awaits a decision; a key of no gated call is left out."""
        return await self.rows.named(keys, scope)

    async def of_run(self, run_id: str, *, scope: Scope) -> list[ToolCallRecord]:
        """Every gated call of a run (in `scope`), decided or not; the ones left pending
        when the run ended are `closed` (never decided, never executed)."""
        record = await self.service.owned(run_id, scope)
        calls = await self.rows.of_run(run_id)
        if record.status in TERMINAL:
            calls = [
                dataclasses.replace(c, approval=ApprovalStatus.CLOSED.value)
                if c.awaits_approval
                else c
                for c in calls
            ]
        return calls

    async def time_out(self) -> list[str]:
        """Give each pending approval past its deadline its run's `approval_on_timeout`
        decision (actor `system:approval-timeout`); the runs decided."""
        now = self.clock.now()
        decided = []
        for run_id in await self.rows.due(now):
            try:
                pending = await self.store.pending(run_id=run_id, scope=Scope.ALL)  # (a sweep)
            except NotFoundError:
                continue
            record = pending.record
            if record.status is not RunStatus.REQUIRES_ACTION:
                continue
            action = record.run_config.approval_on_timeout
            due = [
                Decision(
                    c.call_id,
                    policies.arguments_hash(c.arguments),
                    action,
                    "The tool call was not approved in time." if action == "reject" else None,
                    None,
                    policies.TIMEOUT_ACTOR,
                    c.position,
                )
                for c in pending.calls
                if c.awaits_approval and c.approval_due_at is not None and c.approval_due_at <= now
            ]
            if not due:
                continue
            try:
                await self._decide(run_id, due, Scope.ALL)
            except (
                RunStateConflict,
                ApprovalStale,
                ApprovalConflict,
                ToolCallNotPending,
                InvalidRequest,
            ):
                continue  # (someone decided first)
            decided.append(run_id)
        return decided
