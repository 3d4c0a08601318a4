"""The budget check before each model call (`Budgets.before_call`): what the call could
add at most, against the run's limits and its tenant's and the deployment's daily ones.

Only a run with limits, or a deployment or tenant with a daily limit, pays for any of it:
without them `before_call` answers from two attribute reads and a cached dictionary
lookup, and no statement is run.

The input is estimated from above (`input_estimate`): the UTF-8 bytes of the request's
messages, preamble, tools and model parameters as JSON (a token of the providers'
byte-level tokenizers covers at least one byte; the JSON's quotes and keys cover the
messages' framing), plus `MESSAGE_OVERHEAD` tokens per message, `TOOLS_OVERHEAD` when
tools are offered (Anthropic's tool-use system prompt is ~350 tokens) and `IMAGE_TOKENS`
per image (whose bytes do not say what it costs).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from app.clock import Clock
from app.core.encode import message_to_dict
from app.core.scope import Scope
from app.limits.rules import (
    CACHE_SECONDS,
    DAILY,
    Allowance,
    CachedTenantLimits,
    Ceiling,
    Spent,
    ceilings,
    check,
)
from app.providers import profiles
from app.providers.anthropic import DEFAULT_MAX_TOKENS as ANTHROPIC_DEFAULT
from app.providers.base import ModelRequest
from app.service import lineage
from app.service.prices import PriceBook
from app.service.tenant_limits import TenantLimitsSource
from app.settings import Settings
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.store.waiting import Budget
from app.worker.billing import billed_usage

MESSAGE_OVERHEAD = 16
TOOLS_OVERHEAD = 600
IMAGE_TOKENS = 6_000


#: Parameters that are not sent to a provider as input (the scripted model's script).
NOT_INPUT = frozenset({"script"})


def input_estimate(request: ModelRequest, provider: str | None = None) -> int:
    """An upper estimate of the call's input tokens (see the module's note). The model
    parameters count too: a structured-output schema (`response_format`, Responses'
    `text.format`) is billed as input."""
    messages = [*request.history, request.prompt]
    docs: list[Any] = [message_to_dict(m) for m in messages]
    images = 0

    def strip(value: Any) -> Any:
        nonlocal images
        if isinstance(value, dict):
            if value.get("type") == "image":
                images += 1
                return None
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    params = {
        k: v for k, v in request.params.items() if provider != "scripted" or k not in NOT_INPUT
    }
    body: dict[str, Any] = {
        "messages": strip(docs),
        "preamble": request.preamble,
        "params": strip(params),
    }
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in request.tools
        ]
    size = len(orjson.dumps(body))
    return (
        size
        + MESSAGE_OVERHEAD * (len(messages) + (1 if request.preamble else 0))
        + (TOOLS_OVERHEAD if request.tools else 0)
        + IMAGE_TOKENS * images
    )


@dataclass(frozen=True, slots=True)
class CapParam:
    """Where a provider's request takes its output cap, its default (None: uncapped),
    and the least it accepts."""

    key: str
    current: int | None
    least: int


def cap_param(provider: str, params: Mapping[str, Any]) -> CapParam | None:
    if provider == "openai":
        for key in ("max_completion_tokens", "max_tokens"):
            if isinstance(params.get(key), int):
                return CapParam(key, params[key], 1)
        return CapParam("max_completion_tokens", None, 1)
    if provider == "openai_responses":  # (the API refuses a max_output_tokens below 16)
        return CapParam("max_output_tokens", params.get("max_output_tokens"), 16)
    if provider == "anthropic":
        least = 1
        thinking = params.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            least = 1025  # (budget_tokens ≥ 1024 and below max_tokens)
        return CapParam("max_tokens", params.get("max_tokens", ANTHROPIC_DEFAULT), least)
    if provider == "scripted":
        return CapParam("max_tokens", params.get("max_tokens"), 1)
    return None


def clamped(provider: str, params: Mapping[str, Any], cap: int, default_cap: int) -> dict[str, Any]:
    """The request's parameters with its output cap at most `cap` (a request without one
    gets `min(cap, default_cap)`); Anthropic's thinking budget kept below it."""
    where = cap_param(provider, params)
    out = dict(params)
    if where is None:
        return out
    current = where.current if where.current is not None else default_cap
    new = min(current, cap)
    out[where.key] = new
    thinking = out.get("thinking")
    if provider == "anthropic" and isinstance(thinking, dict):
        budget = thinking.get("budget_tokens")
        if isinstance(budget, int) and budget >= new:
            out["thinking"] = {**thinking, "budget_tokens": new - 1}
    return out


def model_of(record: RunRecord, request: ModelRequest) -> tuple[str, str]:
    """(provider, name) of the model a call goes to: a hook's call names its own
    (`ModelRequest.spec`: a summary another model writes), a turn's is the run's."""
    if request.spec is not None:
        return str(request.spec["provider"]), str(request.spec["name"])
    spec = record.run_config.model
    return spec.provider, spec.name


def spent_of(usage: Mapping[str, Any] | None, created_at: datetime, now: datetime) -> Spent:
    u = usage or {}
    return Spent(
        tokens=int(u.get("total_tokens") or 0),
        cost_usd=float(u.get("cost_usd") or 0.0),
        calls=int(u.get("model_calls") or 0),
        seconds=(now - created_at).total_seconds(),
    )


DailyReader = Callable[[Scope, datetime], Awaitable[tuple[int, float]]]
TenantLimits = Callable[[str], Awaitable[Mapping[str, Any]]]
#: `(a run in a tree, now)`: its root's limits and the tree's spend so far, or None when
#: its root has no limits (or it is in no tree).
TreeReader = Callable[[RunRecord, datetime], Awaitable[tuple[Mapping[str, Any], Spent] | None]]


class Budgets:
    """The worker's budget check. `deployment`: the deployment's daily limits (settings);
    `tenant_limits`: a tenant's limits (cached by the caller, as `Tenants.limits_of`);
    `daily`: the day's (tokens, cost) since `since`, of a tenant or (`Scope.ALL`) of all."""

    def __init__(
        self,
        prices: PriceBook,
        default_cap: int,
        deployment: Mapping[str, Any] | None = None,
        tenant_limits: TenantLimits | None = None,
        daily: DailyReader | None = None,
        *,
        clock: Clock,
        tree: TreeReader | None = None,
    ) -> None:
        self.prices = prices
        self.clock = clock
        self.default_cap = default_cap
        self.deployment = {k: v for k, v in (deployment or {}).items() if v is not None}
        self.tenant_limits = tenant_limits
        self.daily = daily
        self.tree = tree
        self._totals: dict[Scope, tuple[float, datetime, tuple[int, float]]] = {}

    async def before_call(
        self,
        record: RunRecord,
        claimed: list[NewEvent],
        request: ModelRequest,
    ) -> ModelRequest | Budget:
        """The request to send (its cap clamped where a limit bounds the output), or the
        `Budget` the run suspends with. `claimed`: the events of the claim so far (its
        calls are not in the record's usage yet)."""
        limits = record.limits
        tenant = await self._tenant_limits(record.tenant_id)
        in_tree = self.tree is not None and lineage.in_tree(record)
        if not limits and not tenant and not self.deployment and not in_tree:
            return request
        now = self.clock.now()
        mine = _claim_spend(claimed)  # (this claim's calls, not on the day's totals read)
        tree = await self._tree(record, now, mine) if in_tree else []
        if not limits and not tenant and not self.deployment and not tree:
            return request
        provider, name = model_of(record, request)  # (priced and capped as its model)
        price = self.prices.of(provider, name)
        usage = billed_usage(record.usage, claimed) or record.usage
        run_spent = spent_of(usage, record.created_at, now)
        pairs: list[tuple[Ceiling, Spent]] = [(c, run_spent) for c in ceilings(limits)]
        pairs.extend(tree)
        for scope, doc, key in (
            ("tenant", tenant, Scope.of(record.tenant_id)),
            ("deployment", self.deployment, Scope.ALL),
        ):
            daily = {k: v for k, v in doc.items() if k in DAILY and v is not None}
            if daily:
                tokens, cost = await self._day(key, now)
                day = Spent(tokens + mine[0], cost + mine[1])
                pairs.extend((c, day) for c in ceilings(daily, scope))
        wire = profiles.active().param_table_of(provider)  # (a profile: its wire's)
        where = cap_param(wire, request.params)
        least = where.least if where is not None else 1
        verdict = check(pairs, input_estimate(request, wire), price, least)
        if isinstance(verdict, Budget):
            return verdict
        return self._capped(request, wire, verdict)

    def _capped(self, request: ModelRequest, provider: str, allowance: Allowance) -> ModelRequest:
        if allowance.cap is None:
            return request
        params = clamped(provider, request.params, allowance.cap, self.default_cap)
        return replace(request, params=params)

    async def _tree(
        self, record: RunRecord, now: datetime, mine: tuple[int, float, int]
    ) -> list[tuple[Ceiling, Spent]]:
        """The root's limits against the whole tree's spend (a child's budget is the
        smaller of its own and its root's remaining), for a run in a tree; none else."""
        assert self.tree is not None
        found = await self.tree(record, now)
        if found is None:
            return []
        limits, spent = found
        spent = Spent(
            spent.tokens + mine[0], spent.cost_usd + mine[1], spent.calls + mine[2], spent.seconds
        )
        return [(c, spent) for c in ceilings(limits, "tree")]

    async def _tenant_limits(self, tenant: str) -> Mapping[str, Any]:
        if self.tenant_limits is None:
            return {}
        limits = await self.tenant_limits(tenant)
        return {k: v for k, v in limits.items() if k in DAILY and v is not None}

    async def _day(self, of: Scope, now: datetime) -> tuple[int, float]:
        """The day's (tokens, cost) of the runs in `of` (a tenant's, or ALL: the
        deployment's), read at most once a `CACHE_SECONDS` and once a UTC day."""
        start = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        cached = self._totals.get(of)
        moment = self.clock.monotonic()
        if cached is not None and cached[0] > moment and cached[1] == start:
            return cached[2]
        assert self.daily is not None
        totals = await self.daily(of, start)
        self._totals[of] = (moment + CACHE_SECONDS, start, totals)
        return totals


def _claim_spend(events: list[NewEvent]) -> tuple[int, float, int]:
    """(tokens, cost, calls) of a claim's model calls so far."""
    tokens, cost, calls = 0, 0.0, 0
    for e in events:
        if e.type == "model.called":
            tokens += int((e.data.get("usage") or {}).get("total_tokens") or 0)
            cost += float(e.data.get("cost_usd") or 0.0)
            calls += 1
    return tokens, cost, calls


def budgets_for(
    store: RunStore,
    settings: Settings,
    clock: Clock,
    tenant_limits: TenantLimitsSource | None = None,
) -> Budgets:
    """The worker's budget check for this deployment (settings, the tenants' limits as
    `tenant_limits` reads them, none without it; the ledger)."""

    async def daily(of: Scope, start: datetime) -> tuple[int, float]:
        totals = await store.usage_totals(start, start + timedelta(days=1), of)
        return int(totals.get("total_tokens") or 0), float(totals.get("cost_usd") or 0.0)

    async def tree(record: RunRecord, now: datetime) -> tuple[Mapping[str, Any], Spent] | None:
        root_id = lineage.tree_of(record)["root_run_id"]
        root = record if root_id == record.id else await store.get(root_id, scope=Scope.ALL)
        if root is None or not root.limits:
            return None
        usage = await store.trees.subtree_usage(root_id)
        return root.limits, spent_of(usage, root.created_at, now)

    return Budgets(
        PriceBook.for_settings(settings, clock),
        settings.default_max_output_tokens,
        {"daily_tokens": settings.daily_tokens, "daily_cost_usd": settings.daily_cost_usd},
        None if tenant_limits is None else CachedTenantLimits(tenant_limits, clock=clock),
        daily,
        clock=clock,
        tree=tree,
    )
