"""Drives one claimed run: the IO around `AgentRun`.

The driver asks the run what to do (`next_step`), does it (a model call through a
provider, with lease heartbeats), feeds the answer back, and ends the claim with one
fenced write: suspended (`requires_action`), completed, failed, or back to the queue
after a retryable provider error. A write refused by the fencing token means someone
else (cancel, the reaper) won; the driver then drops what it held. How each end is
written lives in `app.worker.endings`; the hooks asked at a turn boundary, in
`app.worker.boundaries`.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

import structlog

from app import tracing
from app.clock import Clock
from app.core import (
    AgentRun,
    AgentRunError,
    CallModel,
    CallTools,
    Done,
    ModelTurn,
    NeedsResolution,
    Usage,
    stored,
)
from app.core.events import LEDGER_EVENTS
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.providers.backoff import BackoffPolicy
from app.providers.base import ModelRequest, Provider, ProviderError, ProviderTurn, ToolSpec
from app.providers.profiles import Profiles
from app.service import convert, recorded
from app.service.prices import PriceBook
from app.service.schemas import OUTPUT_TOOL
from app.settings import Settings
from app.store.hooks import Rewrite
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.worker import boundaries, streaming, tool_rounds
from app.worker.billing import priced_call
from app.worker.boundaries import BoundaryCalls, RetryLater
from app.worker.endings import Endings
from app.worker.gates import Answer, Go, ModelGate, gates_of
from app.worker.lease import Claim, Lease, LeaseLost
from app.worker.stops import Stops
from app.worker.turns import backoff_reason, invalid_call_action, model_turn

log = structlog.get_logger("agentrun.worker")

ProviderFactory = Callable[[Mapping[str, Any]], Provider]
OUTPUT_DESCRIPTION = "Give your final answer: call this once, with the result as its arguments."


class RunDriver:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        worker_id: str,
        providers: ProviderFactory,
        callback_key: str,
        clock: Clock,
        rng: random.Random | None = None,
        stops: Stops | None = None,
        profiles: Profiles | None = None,
        gates: Sequence[ModelGate] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.worker_id = worker_id
        self.providers = providers
        self.callback_key = callback_key
        self.clock = clock
        self.rng = rng or random.Random()
        self.lease = Lease(store, settings.lease_seconds, worker_id, clock, stops)
        self.prices = PriceBook.for_settings(settings, clock)  # (every call is billed)
        # Asked before each model call, in order (`app.worker.gates`); by default the ones
        # the store's hooks make (the features': budgets, shared limits).
        self.gates = tuple(gates_of(store, settings, clock, profiles) if gates is None else gates)
        # (how the claim ends: the fenced writes, `app.worker.endings`)
        self.endings = Endings(store, settings, worker_id, callback_key, clock)

    async def drive(self, record: RunRecord) -> RunStatus | None:
        """Advance a claimed run until it suspends or ends; the status it ended in, or
        None when the lease was lost."""
        return await self._drive(Claim(record, record.version, []))

    async def drive_and_claim(
        self, record: RunRecord, more: Callable[[], bool]
    ) -> tuple[RunRecord | None, bool]:
        """`drive`, whose final write also claims the next due run when `more()` says
        so (one statement on PostgreSQL instead of two). Returns that run (the caller's,
        held under this worker's lease, even when this run's lease was lost; None when
        nothing was due) and whether the queue was looked at (False when the run ended
        without such a write: a lease lost mid-call, `more()` false)."""
        claim = Claim(record, record.version, [], more)
        await self._drive(claim)
        return claim.next, claim.looked

    async def _drive(self, claim: Claim) -> RunStatus | None:
        record = claim.record
        with tracing.span(
            "agentrun.run.drive",
            lambda: {
                **tracing.run_attributes(record),
                "agentrun.worker.id": self.worker_id,
                "agentrun.run.attempts": record.attempts,
                "agentrun.run.turn": record.turn,
            },
            parent=tracing.run_context(record.config),
        ):
            return await self._drive_claimed(claim)

    async def _drive_claimed(self, claim: Claim) -> RunStatus | None:
        record = claim.record
        text = record.log
        if text is None:  # (a record read without its log: read it)
            full = await self.store.get(record.id, with_log=True, scope=Scope.ALL)
            text = full.log if full is not None else None
        claim.loaded = stored.load(record.state, text)
        run = claim.loaded.run
        try:
            if run.pending_tool_calls():  # resumed by its round's answers
                unusable = await self._apply_answers(claim, run)
                if unusable is not None:
                    return await self.endings.end_failed(claim, unusable)
            while True:
                try:
                    step = run.next_step()
                except AgentRunError as err:
                    return await self.endings.fail(claim, run, err)
                if isinstance(step, CallModel):
                    if self.store.hooks.turn_boundaries:  # (none registered: nothing asked)
                        ended = await self._turn_boundary(claim, run, step)
                        if ended is not None:
                            return ended
                    outcome = await self._call_model(claim, run, step)
                    if outcome is not None:
                        return outcome
                    continue
                if isinstance(step, CallTools):
                    pre = [p.preresolved_result for p in step.calls]
                    if all(r is not None for r in pre):
                        run.tool_results(pre)  # type: ignore[arg-type]
                        continue
                    elsewhere = await self.endings.answered_elsewhere(claim, run, step)
                    if elsewhere is not None:  # (a replay's recorded round: written at once)
                        run.tool_results(elsewhere)
                        return await self.endings.progress(claim, run)
                    rows, spawned = await self.endings.round(claim, run, step)
                    here = tool_rounds.answered_here(rows)
                    if here is not None:  # (every agent tool's call refused: go on)
                        run.tool_results(here)
                        continue
                    return await self.endings.suspend_tools(claim, run, rows, spawned)
                assert isinstance(step, Done)
                return await self.endings.complete(claim, run, step.response)
        except LeaseLost:
            log.info("lease lost", run_id=record.id, worker=self.worker_id)
            tracing.event("agentrun.run.lease_lost")
            # The model calls of this claim happened and were billed: keep them on the
            # ledger (outside the lease; this never touches the run's state or token).
            spent = [e for e in claim.events if e.type in LEDGER_EVENTS]
            await self.store.append_events(record.id, None, spent, self.clock.now())
            return None

    async def _apply_answers(self, claim: Claim, run: AgentRun) -> dict[str, Any] | None:
        """Feed the run its round's answers, recorded in their rows; the error when they
        cannot be fed (rows changed by hand, say): the run fails, its state as it was."""
        record = claim.record
        calls = await recorded.round_rows(self.store, record, run)
        try:
            recorded.apply(run, calls)
        except Exception as exc:
            log.warning("answers.unusable", run_id=record.id, error=f"{type(exc).__name__}: {exc}")
            message = f"the answers recorded for round {run.turn()} cannot be fed to the run: {exc}"
            return {"type": type(exc).__name__, "message": message}
        return None

    # --- model calls --------------------------------------------------------------------

    async def _call_model(self, claim: Claim, run: AgentRun, step: CallModel) -> RunStatus | None:
        config = claim.record.run_config
        model = config.model
        tools = [ToolSpec(t.name, t.description, t.parameters) for t in config.tools]
        if config.output_schema is not None:  # (the run ends by calling it)
            tools.append(ToolSpec(OUTPUT_TOOL, OUTPUT_DESCRIPTION, config.output_schema))
        choice = config.tool_choice
        spec = model.doc
        request = ModelRequest(
            model=model.name,
            prompt=step.prompt,
            history=step.history,
            preamble=config.preamble,
            tools=tuple(tools),
            tool_choice=choice,
            params=dict(model.params),
            turn=step.turn,
            attempt=claim.record.model_attempts + 1,
        )
        passed: list[tuple[ModelGate, object]] = []  # (the gates that said go: told after)
        for gate in self.gates:  # (none registered: nothing asked)
            try:
                verdict = await gate.before(claim, request)
            except BaseException:
                await _release(passed)
                raise
            if isinstance(verdict, Go):
                request = verdict.request
                passed.append((gate, verdict.ticket))
                continue
            await _release(passed)  # (the call will not happen)
            names = [t.name for t in tools]
            if isinstance(verdict, Answer):  # (answered without a call: a replay)
                allowed = convert.allowed_tool_names(names, choice)
                turn = model_turn(verdict.turn, frozenset(names), allowed)
                return await self._ingest(claim, run, turn, verdict.event, streamed=False)
            run.withdraw_model_call()  # (stored as it was before the call was asked for)
            return await self.endings.stopped(claim, run, verdict)
        try:
            provider = self.providers(spec)
        except BaseException:  # (what the gates hold is the call's: it will not happen)
            await _release(passed)
            raise
        streamed = config.stream
        started = self.clock.monotonic()
        progress = streaming.Progress(started)
        try:
            with tracing.model_call(spec, request, streamed=streamed) as span:
                try:
                    if streamed:  # text deltas become `model.delta` events (app.worker.streaming)
                        answer = await streaming.stream_answer(
                            self.lease, claim, provider, request, progress=progress
                        )
                    else:
                        answer = await self.lease.hold(claim, provider.complete(request))
                finally:  # (whatever ended the call: its concurrency slots are free now)
                    if passed:
                        await _release(passed)
                tracing.model_answered(span, answer)
        except ProviderError as err:
            err.provider = err.provider or model.provider
            if err.status == 429:  # (one worker's 429 slows every worker, configured or not)
                for gate, ticket in passed:
                    await gate.throttled(ticket, err)
            return await self._provider_failed(claim, err)
        except LeaseLost:  # abandoned mid-flight, its connection closed: on the ledger
            partial = ProviderTurn(choice=(), usage=progress.usage or Usage())
            bill = priced_call(self.prices, model.provider, model.name, partial)
            aborted = progress.aborted(
                request,
                spec,
                bill["usage"],
                bill["cost_usd"],
                streamed,
                bill["price_source"],
                ended=self.clock.monotonic(),
            )
            claim.events.append(aborted)
            raise
        latency_ms = round((self.clock.monotonic() - started) * 1000, 2)
        for gate, ticket in passed:
            gate.answered(ticket, answer.usage)
        names = [t.name for t in tools]
        turn = model_turn(answer, frozenset(names), convert.allowed_tool_names(names, choice))
        called = NewEvent(
            E.MODEL_CALLED,
            {
                "turn": step.turn,
                "provider": model.provider,
                "model": model.name,
                **priced_call(self.prices, model.provider, model.name, answer),
                "finish_reason": answer.finish_reason,
                "latency_ms": latency_ms,
                "message_id": answer.message_id,
                **({"stream": True} if streamed else {}),
            },
        )
        return await self._ingest(claim, run, turn, called, streamed=streamed)

    async def _ingest(
        self, claim: Claim, run: AgentRun, turn: ModelTurn, event: NewEvent, *, streamed: bool
    ) -> RunStatus | None:
        """Feed the run a model's answer (recorded by `event`) and apply the run's policy
        to the invalid calls it holds; a status when that ended the claim."""
        config = claim.record.run_config
        outcome = streaming.ingest_streamed(run, turn) if streamed else run.model_response(turn)
        claim.events.append(event)
        while isinstance(outcome, NeedsResolution):
            action = invalid_call_action(config.invalid_tool_call, outcome.context)
            if action is None:
                return await self.endings.suspend_resolution(claim, run, outcome.context)
            claim.events.append(
                NewEvent(
                    E.TOOL_CALL_INVALID,
                    {"tool_name": outcome.context.tool_name, "action": type(action).__name__},
                )
            )
            try:
                outcome = run.resolve_invalid_tool_call(action)
            except AgentRunError as err:
                return await self.endings.fail(claim, run, err)
        return None

    async def _provider_failed(self, claim: Claim, err: ProviderError) -> RunStatus | None:
        attempt = claim.record.model_attempts + 1
        error = err.to_dict()
        retry = self._schedule(claim, err, attempt, error)
        claim.events.append(self._failed_event(claim, error, attempt))
        if retry is None:
            return await self.endings.end_failed(claim, {"type": "provider_error", **error})
        return await self.endings.back_off(claim, retry)

    def _schedule(
        self, claim: Claim, err: ProviderError, attempt: int, error: dict[str, Any]
    ) -> RetryLater | None:
        """The backoff after the failed `attempt` of the run's next model call (its turn's,
        or a turn-boundary hook's): None when `err` is not retryable or the budget is
        spent (the attempts, or the time since the first failure)."""
        now = self.clock.now()
        policy = BackoffPolicy(
            max_attempts=self.settings.provider_max_attempts,
            max_total_seconds=self.settings.provider_max_backoff_seconds,
            base_seconds=self.settings.provider_backoff_base_seconds,
            cap_seconds=self.settings.provider_backoff_cap_seconds,
        )
        since = claim.record.model_retry_since or now
        elapsed = (now - since).total_seconds()
        delay = policy.schedule(err, attempt, elapsed, rand=self.rng.random)
        if delay is None:
            return None
        until = now + timedelta(seconds=delay.seconds)
        return RetryLater(backoff_reason(delay, until, attempt, policy, error), since)

    def _failed_event(self, claim: Claim, error: dict[str, Any], attempt: int) -> NewEvent:
        model = claim.record.run_config.model.name
        return NewEvent(
            E.MODEL_FAILED,
            {**error, "attempt": attempt, "turn": claim.record.turn + 1, "model": model},
        )

    # --- turn boundaries ----------------------------------------------------------------

    async def _turn_boundary(
        self, claim: Claim, run: AgentRun, step: CallModel
    ) -> RunStatus | None:
        """Ask the `turn_boundaries` hooks before the model call `step` (compaction); the
        status when one rewrote the conversation (written at once), a gate held back a
        call a hook made (applied as to the turn's own call) or such a call failed
        retryably within the run's backoff budget (the run backs off: the hook is asked
        again at the next claim), None: the call goes on."""
        schedule = functools.partial(self._schedule, claim)
        given_up = functools.partial(boundaries.given_up, self.store, claim)

        def calls() -> BoundaryCalls:
            return BoundaryCalls(
                claim,
                self.providers,
                self.lease,
                self.gates,
                self.prices,
                self.clock,
                schedule,
                given_up,
            )

        ended = await boundaries.ask(claim, run, step, self.store.hooks.turn_boundaries, calls)
        if isinstance(ended, Rewrite):
            return await self.endings.rewrite(claim, run, ended)
        if ended is not None:
            return await self.endings.stopped(claim, run, ended)
        return None


async def _release(passed: list[tuple[ModelGate, object]]) -> None:
    """Tell the gates that said go that the call ended (or will not be made)."""
    for gate, ticket in passed:
        await gate.release(ticket)
