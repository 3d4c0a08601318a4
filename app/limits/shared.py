"""The shared limits' SQL on one store: its buckets (`rates_sql.FlowLimits`) and its
slots (`slots_sql.FlowSlots`), built by this feature from the store's backend (the
kernel's store knows neither). One pair per store, made at install (or at the first
use): the gates, /metrics and whatever else reaches them share it."""

from __future__ import annotations

from dataclasses import dataclass
from weakref import WeakKeyDictionary

from app.limits.rates_sql import FlowLimits
from app.limits.slots_sql import FlowSlots
from app.store.runs import RunStore


@dataclass(frozen=True, slots=True)
class Shared:
    flow: FlowLimits
    slots: FlowSlots


_BY_STORE: WeakKeyDictionary[RunStore, Shared] = WeakKeyDictionary()


def shared(store: RunStore) -> Shared:
    """The shared limits' buckets and slots on `store` (made on the first call)."""
    found = _BY_STORE.get(store)
    if found is None:
        flow = FlowLimits(store.backend)
        found = _BY_STORE[store] = Shared(flow, FlowSlots(store.backend, flow))
    return found
