"""A run's limits at create (`checked_limits`: a cost limit on a model without a price is
refused) and afterwards (`RunLimitsService.set_limits`, `POST /v1/runs/{id}/limits`): the
limits named are set, the others kept; a run suspended on a budget resumes (the worker
checks its next call against the new limits), any other run not finished keeps its status
and reads them at its next claim."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.clock import Clock
from app.core.events import EventType as E
from app.core.lifecycle import TERMINAL, RunStatus
from app.core.scope import Scope
from app.service import lineage
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict
from app.service.prices import PriceBook
from app.service.schemas import LimitsIn, RunLimits
from app.settings import Settings
from app.store import changes
from app.store.hooks import Creating
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.store.waiting import Budget

#: Compare-and-set attempts of a limits change racing the run's own moves.
ATTEMPTS = 5


def unpriced(model: Mapping[str, Any], where: str = "model") -> str:
    """Why a cost limit cannot be enforced on `model` (named by the field `where`)."""
    return (
        f"{where} {model.get('provider')}:{model.get('name')} has no price (neither "
        "AGENTRUN_PRICES nor genai-prices knows it)"
    )


async def check_create(create: Creating) -> None:
    """A create's check (`Hooks.async_create_checks`): a 422 when a cost limit is in
    force (the run's, the deployment's) and a model the run may call has no price (its
    own, or one a feature calls for it: a compaction's summariser), which could not be
    enforced."""
    for where, model in create.unpriced.items():
        if create.limits and "max_cost_usd" in create.limits:
            raise InvalidRequest(f"limits.max_cost_usd: {unpriced(model, where)}")
        if create.settings.daily_cost_usd is not None:
            raise InvalidRequest(
                f"the deployment's daily_cost_usd applies: {unpriced(model, where)}"
            )
    # (A tenant's daily_cost_usd is not read here, which would cost a create a
    # statement: the worker suspends such a run before its first call instead.)


class RunLimitsService:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        prices: PriceBook,
        clock: Clock,
    ) -> None:
        self.store = store
        self.settings = settings
        self.prices = prices
        self.clock = clock

    @classmethod
    def of(cls, store: RunStore, settings: Settings, clock: Clock) -> RunLimitsService:
        return cls(
            store,
            settings,
            PriceBook.for_settings(settings, clock),
            clock,
        )

    async def checked_limits(
        self, model: Mapping[str, Any], limits: RunLimits | None
    ) -> dict[str, Any] | None:
        """The limits to store for a new run (`check_create`'s refusal)."""
        stored = None if limits is None else limits.stored()
        unpriced = {} if self.prices.of_spec(model) is not None else {"model": model}
        await check_create(Creating({"model": model}, stored, unpriced, self.settings))
        return stored

    async def set_limits(
        self, run_id: str, body: LimitsIn, *, actor: str | None, scope: Scope
    ) -> RunRecord:
        named = {k: getattr(body, k) for k in body.model_fields_set}
        for _ in range(ATTEMPTS):
            record = await self.store.get(run_id, scope=scope)
            if record is None:
                raise RunNotFound(f"no run with id {run_id}")
            if record.status in TERMINAL:
                raise RunStateConflict(
                    f"cannot change the limits of run {run_id}: it is {record.status.value}",
                    record.status.value,
                )
            previous = dict(record.limits or {})
            new = {k: v for k, v in {**previous, **named}.items() if v is not None}
            if "max_cost_usd" in new:  # (every model the run may call: priced)
                for where, model in self.store.hooks.models_of(record.config).items():
                    if self.prices.of_spec(model) is None:
                        raise InvalidRequest(f"max_cost_usd: {unpriced(model, where)}")
            event = NewEvent(E.RUN_LIMITS_RAISED, {"limits": new, "previous": previous}, actor)
            suspended = record.status is RunStatus.REQUIRES_ACTION
            if suspended and isinstance(record.waiting, Budget):
                change = changes.resume_budget(record.version, new, self.clock.now(), event)
            else:
                change = changes.limit(record.version, new, event)
            updated, _ = await self.store.apply(run_id, change, self.clock.now(), scope=scope)
            if updated is not None:
                if lineage.in_tree(updated):  # (its limits cover its tree)
                    await self._resume_tree(updated, actor)
                return updated
        current = "" if record is None else record.status.value
        raise RunStateConflict(f"run {run_id} kept changing; try again", current)

    async def _resume_tree(self, root: RunRecord, actor: str | None) -> None:
        """The descendants suspended on the tree's budget (the root's limits, which just
        changed) go back to the queue: their next call is checked against the new ones."""
        for node in await self.store.trees.open_descendants(root.id):
            waiting = node.waiting
            if node.status is not RunStatus.REQUIRES_ACTION or not isinstance(waiting, Budget):
                continue
            if waiting.scope != "tree":
                continue
            event = NewEvent(
                E.RUN_LIMITS_RAISED,
                {"limits": node.limits or {}, "previous": node.limits or {}, "root": root.id},
                actor,
            )
            change = changes.resume_budget(node.version, node.limits or {}, self.clock.now(), event)
            await self.store.apply(node.id, change, self.clock.now(), scope=Scope.ALL)
