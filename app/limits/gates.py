"""The limits' model-call gates (`app.worker.gates`): the run's budgets first (a spent
budget suspends the run; a limit near its end caps the call's output), then the shared
rate and concurrency limits (a full limit throttles the run back to the queue; the call
holds its slots until it ends; a 429 slows the key for every worker)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from app.clock import Clock
from app.core import Usage
from app.limits.budgets import Budgets, budgets_for, model_of
from app.limits.rates import Deferred, Flow, Reserved
from app.limits.rates_sql import FLOW_CHANNEL
from app.limits.shared import shared
from app.providers.base import ModelRequest, ProviderError
from app.providers.profiles import Profiles, RateLimits
from app.service.tenant_limits import TenantLimitsSource
from app.settings import Settings
from app.store.changes import Budget
from app.store.run_records import RunRecord
from app.store.runs import RunStore
from app.worker.gates import Defer, Go, ModelGate, Suspend
from app.worker.lease import Claim


class BudgetGate(ModelGate):
    """The run's, its tenant's and the deployment's budgets (`Budgets.before_call`)."""

    def __init__(self, budgets: Budgets) -> None:
        self.budgets = budgets

    async def before(self, claim: Claim, request: ModelRequest) -> Go | Defer | Suspend:
        checked = await self.budgets.before_call(claim.record, claim.events, request)
        if isinstance(checked, Budget):
            return Suspend(checked)
        return Go(checked)


@dataclass(frozen=True, slots=True)
class _Drawn:
    """What a call drew on the shared limits (`reserved` None: no limit applies), and
    the (provider, name) of the model it went to."""

    record: RunRecord
    rates: Mapping[str, RateLimits]
    reserved: Reserved | None
    model: tuple[str, str]


class FlowGate(ModelGate):
    """The shared limits (`Flow`): no statement at all when no limit applies to the run."""

    channel = FLOW_CHANNEL  # (another worker's 429 slowed keys)

    def __init__(self, flow: Flow, clock: Clock) -> None:
        self.flow = flow
        self.clock = clock

    async def before(self, claim: Claim, request: ModelRequest) -> Go | Defer | Suspend:
        record = claim.record
        model = model_of(record, request)  # (a summary's own model, its keys)
        rates = await self.flow.rates(record, model)
        if not rates:
            return Go(request, _Drawn(record, rates, None, model))
        now = self.clock.now()
        gate = await self.flow.gate(record, claim.honoured, request, rates, now)
        if isinstance(gate, Deferred):  # back to the queue until the limit frees
            queued = None
            if gate.reason.limit == "max_concurrent":
                key = gate.reason.key

                async def queued() -> None:
                    await self.flow.recheck(record.id, key, self.clock.now())

            return Defer(gate.reason, gate.due, gate.held, now, queued)
        claim.honoured = claim.honoured or gate.honoured
        return Go(request, _Drawn(record, rates, gate, model))

    async def release(self, ticket: object) -> None:
        assert isinstance(ticket, _Drawn)
        await self.flow.release(ticket.reserved, self.clock.now())

    def answered(self, ticket: object, usage: Usage) -> None:
        assert isinstance(ticket, _Drawn)
        if ticket.reserved is not None:
            self.flow.used(ticket.reserved, usage.total_tokens)

    async def throttled(self, ticket: object, err: ProviderError) -> None:
        # (one worker's 429 slows every worker, configured or not)
        assert isinstance(ticket, _Drawn)
        await self.flow.provider_429(
            ticket.rates, err, self.clock.now(), ticket.record, ticket.model
        )

    def heard(self, payload: str) -> None:
        self.flow.heard(payload)

    async def catch_up(self, now: datetime) -> None:
        await self.flow.catch_up(now)


def model_gates(
    store: RunStore,
    settings: Settings,
    clock: Clock,
    profiles: Profiles | None,
    budgets: Budgets | None = None,
    *,
    tenant_limits: TenantLimitsSource | None = None,
) -> tuple[BudgetGate, FlowGate]:
    """One driver's gates, budgets first; they share the tenant limits' cache (read from
    `tenant_limits`)."""
    budgets = budgets or budgets_for(store, settings, clock, tenant_limits)
    sql = shared(store)
    flow = Flow(
        sql.flow,
        sql.slots,
        profiles,
        budgets.tenant_limits,
        settings.default_max_output_tokens,
        lease_seconds=settings.lease_seconds,
        provider_timeout=settings.provider_timeout,
        clock=clock,
    )
    return BudgetGate(budgets), FlowGate(flow, clock)
