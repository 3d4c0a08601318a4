"""The ends of a claim: the one fenced write that ends what a worker holds of a run.

A claim ends suspended (`requires_action`: a tool round, an invalid call to resolve, a
budget spent), completed, failed, or back in the queue (a gate's throttle, a model call's
backoff, a hook's answer written at once). Each is one `store.apply` under the claim's
fencing token (`write`), which may also claim the slot's next run; a write the token
refuses raises `LeaseLost`: someone else (cancel, the reaper) won. The driver
(`app.worker.driver`) decides which end; this module knows how each is written, so the
driver reads as the claim loop and its model calls.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from app import tracing
from app.clock import Clock
from app.core import (
    AgentRun,
    AgentRunError,
    CallTools,
    InvalidToolCallContext,
    PromptResponse,
    UserContent,
    stored,
)
from app.core.lifecycle import RunStatus
from app.core.lifecycle import Transition as T
from app.core.scope import Scope
from app.core.serde import message_to_dict
from app.service.tokens import callback_token, token_hash
from app.settings import Settings
from app.store import changes
from app.store.changes import Budget, Change, Resolution
from app.store.changes.value import NO_RETRY
from app.store.hooks import Rewrite, Spawned
from app.store.run_records import NewToolCall
from app.store.runs import RunStore
from app.worker import tool_rounds
from app.worker.billing import billed_usage
from app.worker.boundaries import RetryLater, Stopped
from app.worker.gates import Defer, Refuse
from app.worker.lease import Claim, LeaseLost

NO_SPAWNS = Spawned()


class Endings:
    """How one worker's claims end: each method writes the claim's end and returns the
    run's status after it (`LeaseLost` when the fencing token moved on)."""

    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        worker_id: str,
        callback_key: str,
        clock: Clock,
    ) -> None:
        self.store = store
        self.settings = settings
        self.worker_id = worker_id
        self.callback_key = callback_key  # (signs a tool round's callback URL)
        self.clock = clock

    # --- a tool round -------------------------------------------------------------------

    async def round(
        self, claim: Claim, run: AgentRun, step: CallTools
    ) -> tuple[list[NewToolCall], Spawned]:
        """The round's rows; an agent tool's calls become child runs (or are refused with
        an error result) when the run has agent tools and the store a spawner."""
        config = claim.record.run_config
        rows = tool_rounds.rows(step, config)
        spawner = self.store.hooks.round_spawns
        if not config.spawns or spawner is None:
            return rows, NO_SPAWNS
        spawned = await spawner(claim.record, rows, run.turn(), self.clock.now())
        tool_rounds.refuse(step, rows, spawned.refused)
        return rows, spawned

    async def answered_elsewhere(
        self, claim: Claim, run: AgentRun, step: CallTools
    ) -> list[UserContent] | None:
        """A round's results from a `round_answers` hook (the first that answers every
        call), or None: the round goes to its executors."""
        for answerer in self.store.hooks.round_answers:
            results = await answerer(
                claim.record, run.full_history(), step.calls, run.turn(), claim.events
            )
            if results is not None:
                return results
        return None

    # --- suspended ----------------------------------------------------------------------

    async def suspend_tools(
        self, claim: Claim, run: AgentRun, rows: list[NewToolCall], spawned: Spawned
    ) -> RunStatus | None:
        round = run.turn()
        config = claim.record.run_config
        approval_required = (  # (the store's round gates: approvals)
            self.store.hooks.gate_round(config, rows, round, self.clock.now)
            if config.gates
            else None
        )
        token = callback_token(self.callback_key, claim.record.id, round)
        requires_action = tool_rounds.requires_action(
            rows, round, self.settings.callback_url(token)
        )
        now = self.clock.now()  # (the suspension's time, as its event's)
        change = changes.suspend_for_tools(
            claim.version,
            self._snapshot(claim),
            run.turn(),
            rows,
            token_hash(token),
            self._expires_at(claim),
            claim.events,
            self._usage(claim),
            requires_action,
            now,
            approval_required,
            spawned.children,
            tool_rounds.children_started(rows, round),
        )
        return await self.write(claim, change, now)

    async def suspend_resolution(
        self, claim: Claim, run: AgentRun, ctx: InvalidToolCallContext
    ) -> RunStatus | None:
        now = self.clock.now()
        change = changes.suspend_for_resolution(
            claim.version,
            self._snapshot(claim),
            run.turn(),
            Resolution(ctx.tool_name, ctx.tool_call_id, ctx.args),
            self._expires_at(claim),
            claim.events,
            self._usage(claim),
            now,
        )
        return await self.write(claim, change, now)

    async def suspend_budget(self, claim: Claim, run: AgentRun, reason: Budget) -> RunStatus | None:
        """The next model call could pass a limit: suspended before it is made."""
        now = self.clock.now()
        change = changes.suspend_for_budget(
            claim.version,
            self._snapshot(claim),
            run.turn(),
            reason,
            self._expires_at(claim),
            claim.events,
            self._usage(claim),
            now,
        )
        return await self.write(claim, change, now)

    # --- back to the queue --------------------------------------------------------------

    async def stopped(self, claim: Claim, run: AgentRun, verdict: Stopped) -> RunStatus | None:
        """A model call not made (a gate's verdict, or a hook's call that backs the run
        off): the run withdrew it; the claim ends as the verdict says."""
        if isinstance(verdict, Defer):
            return await self.throttle(claim, verdict)
        if isinstance(verdict, Refuse):
            return await self.end_failed(claim, verdict.error)
        if isinstance(verdict, RetryLater):
            return await self.back_off(claim, verdict)
        return await self.suspend_budget(claim, run, verdict.reason)

    async def throttle(self, claim: Claim, defer: Defer) -> RunStatus | None:
        """A gate deferred the call: back to the queue until its limit frees."""
        change = changes.throttle(
            claim.version, defer.reason, defer.due, defer.held, claim.events, self._usage(claim)
        )
        status = await self.write(claim, change, defer.at)
        if status is RunStatus.QUEUED and defer.queued is not None:
            await defer.queued()
        return status

    async def back_off(self, claim: Claim, retry: RetryLater) -> RunStatus | None:
        """Back to the queue, due when `retry` says (the claim's events written with it)."""
        change = changes.back_off(
            claim.version, retry.reason, retry.since, claim.events, self._usage(claim)
        )
        return await self.write(claim, change)

    async def progress(
        self, claim: Claim, run: AgentRun, *, rewritten: bool = False
    ) -> RunStatus | None:
        """What a hook answered in this claim, written at once; the run back in the queue.
        `rewritten`: a new conversation, so the attempts a backoff counted (a hook's call
        failing, then answered) are over: the turn's call counts its own."""
        now = self.clock.now()
        change = changes.rewrite(
            claim.version, self._snapshot(claim), run.turn(), now, claim.events, self._usage(claim)
        )
        if rewritten:
            change = dataclasses.replace(change, values={**change.values, **NO_RETRY})
        return await self.write(claim, change, now)

    async def rewrite(self, claim: Claim, run: AgentRun, rewrite: Rewrite) -> RunStatus | None:
        """The run goes on with `rewrite`'s conversation: written at once (its log batch
        replaces the lists; the earlier batches keep the originals), back to the queue."""
        state = dataclasses.replace(
            run.state, chat_history=rewrite.history, new_messages=list(rewrite.messages)
        )
        if claim.loaded is None:
            raise RuntimeError("the claim's run is not loaded")
        stored.rewrite(claim.loaded, AgentRun.from_state(state))
        claim.events.extend(rewrite.events)
        return await self.progress(claim, run, rewritten=True)

    # --- ended --------------------------------------------------------------------------

    async def complete(
        self, claim: Claim, run: AgentRun, response: PromptResponse
    ) -> RunStatus | None:
        change = changes.complete(
            claim.version,
            self._snapshot(claim),
            run.turn(),
            response.output,
            claim.events,
            self._usage(claim),
        )
        return await self.write(claim, change)

    async def fail(self, claim: Claim, run: AgentRun, err: AgentRunError) -> RunStatus | None:
        error: dict[str, Any] = {"type": type(err).__name__, "message": str(err)}
        history = getattr(err, "chat_history", None)
        if history is not None:
            error["history_length"] = len(history)
            error["last_message"] = message_to_dict(history[-1]) if history else None
        return await self.end_failed(claim, error)

    async def end_failed(self, claim: Claim, error: dict[str, Any]) -> RunStatus | None:
        """The stored state stays the last durable one, so an operator can retry."""
        change = changes.fail(claim.version, error, claim.events, self._usage(claim))
        return await self.write(claim, change)

    # --- the write ----------------------------------------------------------------------

    async def write(
        self, claim: Claim, change: Change, now: datetime | None = None
    ) -> RunStatus | None:
        """End the claim with `change` at `now` (default: the clock's) (and, when the slot
        wants more, claim its next run in the same statement); `LeaseLost` when the
        fencing token moved on."""
        now = now or self.clock.now()
        if claim.record.flow_reserved_at is not None and change.transition is not T.THROTTLE:
            # (the reservation was the claim's call's: the next call draws its own)
            change = dataclasses.replace(change, values={**change.values, "flow_reserved_at": None})
        if claim.fresh_retries and "model_attempts" not in change.values:
            # (a hook's call failed for good: the attempts it counted are not the turn's)
            change = dataclasses.replace(change, values={**change.values, **NO_RETRY})
        chain = claim.chain is not None and claim.chain()
        lease_until = now + timedelta(seconds=self.settings.lease_seconds)
        record, claim.next = await self.store.apply(
            claim.record.id,
            change,
            now,
            claim_for=(self.worker_id, lease_until) if chain else None,
            known=claim.record,
            scope=Scope.ALL,
        )
        claim.looked = chain and not change.spawns  # (a spawning write claims nothing)
        if record is None:
            raise LeaseLost()
        tracing.claim_ended(record)
        return record.status

    def _expires_at(self, claim: Claim) -> datetime:
        """A suspension's expiry: after the run's own `expires_in`, else the default."""
        expires_in = claim.record.run_config.expires_in or self.settings.default_expires_in
        return self.clock.now() + timedelta(seconds=expires_in)

    def _snapshot(self, claim: Claim) -> stored.Snapshot:
        if claim.loaded is None:
            raise RuntimeError("the claim's run is not loaded")
        return stored.snapshot(claim.loaded)

    def _usage(self, claim: Claim) -> dict[str, Any] | None:
        return billed_usage(claim.record.usage, claim.events)
