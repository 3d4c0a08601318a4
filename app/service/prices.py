"""What a model call costs: the deployment's own prices (`AGENTRUN_PRICES`) over the
maintained table of `genai-prices` (pydantic's, bundled with the package: no network).

`PriceBook.of(provider, model)` answers a `Price` (with its `source`, recorded on each
ledger row and `model.called` event) or None for a model neither knows: its calls are
reported unpriced (`cost_usd` and `price_source` null) and a cost limit on it is refused
at create. Lookups are cached per (provider, model): a priced call costs one dictionary
read plus the arithmetic of `Price.cost`.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from app.clock import Clock
from app.settings import Settings

if TYPE_CHECKING:  # (imported when a model is first looked up: ~0.25 s of CPU, which a
    # process that prices nothing, or only from AGENTRUN_PRICES, never spends)
    from genai_prices import types as gp

#: The `price_source` of a price from AGENTRUN_PRICES.
CONFIG_SOURCE = "config"
GENAI_PRICES_SOURCE = f"genai-prices@{version('genai-prices')}"

#: Each provider of this service as genai-prices names it (`scripted`: none, only a
#: price of AGENTRUN_PRICES prices it).
PROVIDER_IDS = {"openai": "openai", "openai_responses": "openai", "anthropic": "anthropic"}
_MILLION = 1_000_000


@dataclass(frozen=True, slots=True)
class Price:
    """One model's price; `cost(...)` in US dollars (rounded to 1e-8, as the ledger keeps
    it). Tiered prices (a higher rate past some input size) are the table's own."""

    source: str
    flat: Mapping[str, float] | None = None  # USD per 1M tokens: input, output, cached_input
    model: gp.ModelInfo | None = None  # (genai-prices' own, for its table's prices)
    provider: gp.Provider | None = None
    context_window: int | None = None
    clock: Clock | None = None  # (a table's price: its tier is the one in force now)

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        cached = min(cached_input_tokens, input_tokens)
        if self.flat is not None:
            p = self.flat
            usd = (
                (input_tokens - cached) * p.get("input", 0.0)
                + cached * p.get("cached_input", p.get("input", 0.0))
                + output_tokens * p.get("output", 0.0)
            )
            return round(usd / _MILLION, 8)
        assert self.model is not None and self.provider is not None and self.clock is not None
        from genai_prices import types as gp

        usage = gp.Usage(
            input_tokens=input_tokens, output_tokens=output_tokens, cache_read_tokens=cached
        )
        calc = self.model.calc_price(usage, self.provider, genai_request_timestamp=self.clock.now())
        return round(float(calc.total_price), 8)

    def output_rate(self, input_tokens: int) -> float:
        """USD per output token for a call with this many input tokens (its tier's)."""
        base = self.cost(input_tokens, 0)
        return max(0.0, (self.cost(input_tokens, _MILLION) - base) / _MILLION)


class PriceBook:
    """The prices of a deployment: `overrides` (AGENTRUN_PRICES, `"provider:model"` keys,
    USD per 1M tokens) first, then genai-prices. `base_urls`: a provider's configured
    host (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), so an OpenAI-compatible server is priced
    as the provider it is, or not at all."""

    def __init__(
        self,
        overrides: Mapping[str, Mapping[str, float]],
        base_urls: Mapping[str, str | None] | None = None,
        *,
        clock: Clock,
    ) -> None:
        self.overrides = overrides
        self.clock = clock
        self.base_urls = dict(base_urls or {})
        self._cache: dict[tuple[str, str], Price | None] = {}

    @classmethod
    def for_settings(cls, settings: Settings, clock: Clock) -> PriceBook:
        """The deployment's: AGENTRUN_PRICES over genai-prices, for its provider hosts."""
        return cls(
            settings.prices,
            {"openai": settings.openai_base_url, "anthropic": settings.anthropic_base_url},
            clock=clock,
        )

    def of(self, provider: str, model: str) -> Price | None:
        key = (provider, model)
        try:
            return self._cache[key]
        except KeyError:
            price = self._cache[key] = self._find(provider, model)
            return price

    def of_spec(self, spec: Mapping[str, Any]) -> Price | None:
        return self.of(str(spec.get("provider")), str(spec.get("name")))

    def _find(self, provider: str, model: str) -> Price | None:
        own = self.overrides.get(f"{provider}:{model}")
        if own is not None:
            return Price(CONFIG_SOURCE, flat=own)
        provider_id = PROVIDER_IDS.get(provider)
        if provider_id is None:
            return None
        url = self.base_urls.get("anthropic" if provider == "anthropic" else "openai")
        from genai_prices import data_snapshot

        snapshot = data_snapshot.get_snapshot()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if url:
                    found, info = snapshot.find_provider_model(model, None, None, url)
                else:
                    found, info = snapshot.find_provider_model(model, None, provider_id, None)
                info.get_prices(self.clock.now())
        except (LookupError, ValueError):
            return None
        return Price(
            GENAI_PRICES_SOURCE,
            model=info,
            provider=found,
            context_window=info.context_window,
            clock=self.clock,
        )
