"""What the limits plug into the kernel: the check of a run's limits at create
(`app.limits.run_limits`), the model-call gates (`app.limits.gates`) and the shared
limits' gauges on /metrics (`app.limits.gauges`), both on the buckets and slots the
feature builds on the store (`app.limits.shared`). Its route is mounted by app.main."""

from __future__ import annotations

from functools import partial

from app.limits.gates import model_gates
from app.limits.gauges import flow_gauges
from app.limits.run_limits import check_create
from app.limits.shared import shared
from app.service.tenant_limits import TenantLimitsSource
from app.store.runs import RunStore


def install(store: RunStore, tenant_limits: TenantLimitsSource | None = None) -> None:
    """Each driver of `store` asks the budgets (a tenant's daily ones read from `tenant_limits`),
    then the shared limits, before a call; /metrics shows the shared limits' keys."""
    shared(store)
    store.hooks.add_model_gates(partial(model_gates, store, tenant_limits=tenant_limits))
    store.hooks.add_gauges(partial(flow_gauges, store))
    store.hooks.on_create_async(check_create)
