"""The model calls a turn-boundary hook makes (`app.store.hooks.ModelCalls`): a summary
for compaction, say. Each is the run's as much as its turns' calls are: asked of the
driver's model gates first, held under the claim's lease (heartbeats; a lost lease
abandons it), and recorded on the claim as a `model.called` (with the hook's `purpose`)
so the run's usage, its budgets and the usage ledger count it; a failure is a
`model.failed` and no answer (the hook goes on without one: its call is not retried).

A gate that does not let the call go (defer, suspend, refuse) stops the hook's calls:
`stopped` keeps its verdict, which the driver then applies to the claim as it would to
the turn's own call. The gates see the request's `purpose` (a replay answers only a
run's turns) and its `spec`, the model it goes to (the budgets price and cap it by that
model, the shared limits draw on that model's keys); a gate that answers the call
itself answers it here too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from app import tracing
from app.clock import Clock
from app.core.events import EventType as E
from app.providers.base import ModelRequest, Provider, ProviderError, ProviderTurn
from app.service.prices import PriceBook
from app.store.run_records import NewEvent
from app.worker.billing import priced_call
from app.worker.gates import Answer, Defer, Go, ModelGate, Refuse, Suspend
from app.worker.lease import Claim, Lease, LeaseLost
from app.worker.streaming import Progress

#: A verdict that kept a hook's call from being made.
Stopped = Defer | Suspend | Refuse


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
    ) -> None:
        self.claim = claim
        self.providers = providers
        self.lease = lease
        self.gates = gates
        self.prices = prices
        self.clock = clock
        self.stopped: Stopped | None = None

    async def call(
        self, spec: Mapping[str, Any], request: ModelRequest, purpose: str
    ) -> ProviderTurn | None:
        if self.stopped is not None:
            return None
        passed: list[tuple[ModelGate, object]] = []
        request = dataclasses.replace(request, purpose=purpose, spec=spec)  # (for the gates)
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
            data = {**err.to_dict(), "attempt": request.attempt, "turn": request.turn}
            self.claim.events.append(
                NewEvent(E.MODEL_FAILED, {**data, "model": model, "purpose": purpose})
            )
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
