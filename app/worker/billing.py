"""The ledger's arithmetic of a model call: what a `model.called` event bills
(`priced_call`: usage and cost at the deployment's prices) and what a run's usage becomes
after a claim (`billed_usage`). Kernel: every call is billed, limits or none."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.providers.base import ProviderTurn
from app.service.prices import PriceBook
from app.store.run_records import NewEvent


def billed_usage(usage: Mapping[str, Any] | None, events: list[NewEvent]) -> dict[str, Any] | None:
    """The run's usage after a claim: what it had plus every model call the claim made
    (`model.called`), whether or not the run kept the answer (a failed run, a turn
    asked again after a backoff): its token counters, `model_calls`, and `cost_usd` (the
    priced calls' sum; absent while none was priced). None when the claim made no call:
    nothing changes."""
    calls = [e.data for e in events if e.type == "model.called"]
    if not calls:
        return None
    total = dict(usage or {})
    for call in calls:
        for key, value in (call.get("usage") or {}).items():
            if isinstance(value, int):
                total[key] = int(total.get(key) or 0) + value
        total["model_calls"] = int(total.get("model_calls") or 0) + 1
        cost = call.get("cost_usd")
        if cost is not None:
            total["cost_usd"] = round(float(total.get("cost_usd") or 0.0) + cost, 8)
    return total


def priced_call(prices: PriceBook, provider: str, model: str, turn: ProviderTurn) -> dict[str, Any]:
    """A `model.called` event's `usage`, `cost_usd` and `price_source` (both null for a
    model without a price)."""
    u = turn.usage
    price = prices.of(provider, model)
    return {
        "usage": {
            "input_tokens": u.input_tokens,
            "output_tokens": u.output_tokens,
            "total_tokens": u.total_tokens,
            "cached_input_tokens": u.cached_input_tokens,
            "reasoning_tokens": u.reasoning_tokens,
        },
        "cost_usd": None
        if price is None
        else price.cost(u.input_tokens, u.output_tokens, u.cached_input_tokens),
        "price_source": None if price is None else price.source,
    }
