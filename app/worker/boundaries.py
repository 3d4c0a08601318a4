"""The model calls a turn-boundary hook makes (`app.store.hooks.ModelCalls`): a summary
for compaction, say. Each is the run's as much as its turns' calls are: asked of the
driver's model gates first, held under the claim's lease (heartbeats; a lost lease
abandons it), and recorded on the claim as a `model.called` (with the hook's `purpose`)
so the run's usage, its budgets and the usage ledger count it; a failure is a
`model.failed` (with the `purpose` too) and no answer.

A gate that does not let the call go (defer, suspend, refuse) stops the hook's calls:
`stopped` keeps its verdict, which the driver then applies to the claim as it would to
the turn's own call. The gates see the request's `purpose` (a replay answers only a
run's turns) and its `spec`, the model it goes to (the budgets price and cap it by that
model, the shared limits draw on that model's keys); a gate that answers the call
itself answers it here too.

A retryable failure (429, 5xx, a timeout) that the run's backoff budget still covers
stops the hook's calls too (`RetryLater`, from the driver's `schedule`): the run backs off
as after its turn's own call (durably: back in the queue, due later, its waiting
reason's `error` naming the `purpose`), and its next claim asks the hook again. The
attempts count as the turn's do (`model_attempts`: the run's next call's). A failure that
is not retryable, or one past the budget, fails for good: it stops nothing, the hook goes
on without the answer (its `model.failed` says `retries_exhausted` when the budget was
spent; logged), the turn's call counts its own attempts (`failed_for_good`: the driver
starts them again), and a call of that `purpose` is not made again at that boundary
(`given_up`: read off the run's latest events) while the turn's call is retried or
deferred there (each claim would otherwise ask it again first: a summary that keeps
answering 429 would keep the turn behind the shared limits it slows). The next boundary
makes it again.

`ask` asks the hooks at one boundary and hands the driver what ends the claim there (a
verdict that stopped a call, or a rewritten conversation); the driver writes it
(`app.worker.endings`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import structlog

from app import tracing
from app.clock import Clock
from app.core import AgentRun, CallModel
from app.core.events import EventType as E
from app.providers.base import ModelRequest, Provider, ProviderError, ProviderTurn
from app.service.prices import PriceBook
from app.store.changes import Backoff
from app.store.hooks import Boundary, Rewrite, TurnBoundary
from app.store.run_records import EventRecord, NewEvent
from app.store.runs import RunStore
from app.worker.billing import priced_call
from app.worker.gates import Answer, Defer, Go, ModelGate, Refuse, Suspend
from app.worker.lease import Claim, Lease, LeaseLost
from app.worker.streaming import Progress

log = structlog.get_logger("agentrun.worker")

#: How many of a run's latest events a turn boundary reads for a hook's call that failed
#: for good there (`given_up`).
GIVEN_UP_WINDOW = 100


@dataclasses.dataclass(frozen=True, slots=True)
class RetryLater:
    """A hook's call failed with a retryable error: the run backs off with `reason` (its
    attempts counted from `since`), as after its turn's own call, and the hook is asked
    again at the next claim."""

    reason: Backoff
    since: datetime


#: `(the failed call's error, its attempt, the error's document)`: the run's backoff, or
#: None when the error is not retryable or the run's backoff budget is spent.
Schedule = Callable[[ProviderError, int, dict[str, Any]], RetryLater | None]
#: `(purpose, turn)`: whether a call of `purpose` failed for good at this turn boundary.
GivenUp = Callable[[str, int], Awaitable[bool]]

#: A verdict that kept a hook's call from being made, or a failure that backs the run off.
Stopped = Defer | Suspend | Refuse | RetryLater


class BoundaryCalls:
    """One hook's model calls at one turn boundary of `claim`."""

    def __init__(
        self,
        claim: Claim,
        providers: Callable[[Mapping[str, Any]], Provider],
        lease: Lease,
        gates: Sequence[ModelGate],
        prices: PriceBook,
        clock: Clock,
        schedule: Schedule,
        given_up: GivenUp,
    ) -> None:
        self.claim = claim
        self.providers = providers
        self.lease = lease
        self.gates = gates
        self.prices = prices
        self.clock = clock
        self.schedule = schedule
        self.given_up = given_up
        self.stopped: Stopped | None = None
        self.failed_for_good = False  # (a call failed, not to be retried)

    async def call(
        self, spec: Mapping[str, Any], request: ModelRequest, purpose: str
    ) -> ProviderTurn | None:
        if self.stopped is not None:
            return None
        if await self.given_up(purpose, request.turn):  # (at this boundary: not again)
            log.debug("boundary_call.skipped", run_id=self.claim.record.id, purpose=purpose)
            return None
        passed: list[tuple[ModelGate, object]] = []
        attempt = self.claim.record.model_attempts + 1  # (the run's next call's, as a turn's)
        request = dataclasses.replace(request, purpose=purpose, spec=spec, attempt=attempt)
        try:
            for gate in self.gates:
                verdict = await gate.before(self.claim, request)
                if isinstance(verdict, Go):
                    request = verdict.request
                    passed.append((gate, verdict.ticket))
                    continue
                if isinstance(verdict, Answer):  # (a replay's recorded answer: no call)
                    self.claim.events.append(verdict.event)
                    return verdict.turn
                self.stopped = verdict
                return None
            provider = self.providers(spec)
            return await self._call(provider, spec, request, purpose, passed)
        finally:  # (whatever ended the call, or kept it from being made)
            for gate, ticket in passed:
                await gate.release(ticket)

    async def _call(
        self,
        provider: Provider,
        spec: Mapping[str, Any],
        request: ModelRequest,
        purpose: str,
        passed: list[tuple[ModelGate, object]],
    ) -> ProviderTurn | None:
        name, model = str(spec["provider"]), str(spec["name"])
        started = self.clock.monotonic()
        progress = Progress(started)
        try:
            with tracing.model_call(spec, request, streamed=False) as span:
                answer = await self.lease.hold(self.claim, provider.complete(request))
                tracing.model_answered(span, answer)
        except ProviderError as err:
            err.provider = err.provider or name
            if err.status == 429:
                for gate, ticket in passed:
                    await gate.throttled(ticket, err)
            self._failed(err, request, model, purpose)
            return None
        except LeaseLost:  # (abandoned: on the ledger all the same)
            bill = priced_call(self.prices, name, model, ProviderTurn(choice=()))
            aborted = progress.aborted(
                request,
                spec,
                bill["usage"],
                bill["cost_usd"],
                False,
                bill["price_source"],
                ended=self.clock.monotonic(),
            )
            self.claim.events.append(NewEvent(aborted.type, {**aborted.data, "purpose": purpose}))
            raise
        for gate, ticket in passed:
            gate.answered(ticket, answer.usage)
        self.claim.events.append(
            NewEvent(
                E.MODEL_CALLED,
                {
                    "turn": request.turn,
                    "provider": name,
                    "model": model,
                    **priced_call(self.prices, name, model, answer),
                    "finish_reason": answer.finish_reason,
                    "latency_ms": round((self.clock.monotonic() - started) * 1000, 2),
                    "message_id": answer.message_id,
                    "purpose": purpose,
                },
            )
        )
        return answer

    def _failed(self, err: ProviderError, request: ModelRequest, model: str, purpose: str) -> None:
        """Record a failed call (`model.failed`); a retryable one the run's budget covers
        stops the hook's calls: the run backs off."""
        error = err.to_dict()
        data = {**error, "attempt": request.attempt, "turn": request.turn, "model": model}
        retry = self.schedule(err, request.attempt, {**error, "purpose": purpose})
        if retry is None and err.retryable:
            data["retries_exhausted"] = True
        self.claim.events.append(NewEvent(E.MODEL_FAILED, {**data, "purpose": purpose}))
        if retry is not None:
            self.stopped = retry
            return
        self.failed_for_good = True
        log.warning(
            "boundary_call.failed",
            run_id=self.claim.record.id,
            purpose=purpose,
            turn=request.turn,
            attempt=request.attempt,
            provider=error["provider"],
            status=error["status"],
            retryable=err.retryable,
            retries_exhausted=err.retryable,
            message=error["message"],
        )


async def ask(
    claim: Claim,
    run: AgentRun,
    step: CallModel,
    hooks: Sequence[TurnBoundary],
    calls: Callable[[], BoundaryCalls],
) -> Stopped | Rewrite | None:
    """Ask `hooks` in turn before the model call `step` (each with its own `calls()`);
    what ends the claim there (the run's call withdrawn): the verdict that stopped a
    hook's call, else a hook's rewritten conversation; None: the call goes on."""
    for hook in hooks:
        made = calls()
        rewrite = await hook(Boundary(claim.record, run, step, made))
        if made.failed_for_good:  # (the turn's call counts its own attempts)
            claim.fresh_retries = True
            claim.record = dataclasses.replace(
                claim.record, model_attempts=0, model_retry_since=None
            )
        stopped = made.stopped
        if stopped is not None or rewrite is not None:
            run.withdraw_model_call()  # (the run as it was before the call was asked for)
            return stopped if stopped is not None else rewrite
    return None


async def given_up(store: RunStore, claim: Claim, purpose: str, turn: int) -> bool:
    """Whether a hook's call of `purpose` failed for good at this turn boundary in an
    earlier claim (the turn's call then retried, or deferred): not made again here. Read
    off the run's events newest first, `GIVEN_UP_WINDOW` at a time, back to its latest
    answered turn: however many events its retries wrote since (a window of the latest
    only would let the call be made again, its give-up resetting the turn's attempts each
    time: a run whose calls all fail would never end)."""
    before = claim.record.last_event_seq
    while before > 0:
        after = max(0, before - GIVEN_UP_WINDOW)
        events = await store.events(claim.record.id, after=after, limit=before - after)
        found = gave_up_at(reversed(events), purpose, turn)
        if found is not None:
            return found
        before = after
    return False


def gave_up_at(events: Iterable[EventRecord], purpose: str, turn: int) -> bool | None:
    """Whether `events` (a run's, newest first) show a call of `purpose` that failed for
    good at `turn`'s boundary, since the run's latest turn was answered (or an operator's
    retry put it back); None when they do not reach so far back."""
    for event in events:
        data = event.data
        if event.type in (E.RUN_RETRIED, E.MODEL_REPLAYED) or (
            event.type == E.MODEL_CALLED and "purpose" not in data
        ):
            return False
        if (
            event.type == E.MODEL_FAILED
            and data.get("purpose") == purpose
            and data.get("turn") == turn
            and (not data.get("retryable") or data.get("retries_exhausted"))
        ):
            return True
    return None
