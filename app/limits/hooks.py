"""What the limits plug into the kernel: the model-call gates (`app.limits.gates`)."""

from __future__ import annotations

from functools import partial

from app.limits.gates import model_gates
from app.store.runs import RunStore


def install(store: RunStore) -> None:
    """Each driver of `store` asks the budgets, then the shared limits, before a call."""
    store.hooks.add_model_gates(partial(model_gates, store))
