"""Approvals of gated tool calls: a run's policies hold some calls of a tool round until a
person decides them (`policies`: which calls; `rounds`: the round gate; `service`: the
decisions, the inboxes and the timeout sweep; `rows`: their SQL; `routes`: the HTTP
routes, mounted by the composition root). The kernel knows none of it: `install` plugs
it into the store's extension points (`app.store.hooks`).
"""

from __future__ import annotations

from datetime import datetime

from app.approvals import policies, rounds
from app.approvals.service import ApprovalService
from app.service.runs import RunService
from app.store.hooks import Sweep


def install(service: RunService) -> None:
    """Plug approvals into `service`'s store: a worker suspending a tool round holds the
    gated calls (`rounds.gate`); a create refuses policies this service would not
    evaluate and drops the approval options left unset; a worker's reaper gives each
    pending approval past its deadline its run's `approval_on_timeout` decision."""
    hooks = service.store.hooks
    hooks.add_round_gate(rounds.gate)
    hooks.on_create(policies.check_approvals, policies.without_unset_approvals)
    approvals = ApprovalService(service)

    async def timed_out(now: datetime) -> list[str]:  # (its clock is the service's)
        return await approvals.time_out()

    hooks.add_sweep(Sweep("approvals timed out", timed_out))
