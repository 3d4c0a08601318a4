"""The features plugged into the kernel's extension points (`app.store.hooks`): the one
list the composition root (and a test that builds its own store) installs."""

from __future__ import annotations

from app import agents, approvals, compaction, conversations, forks, schedules, tenancy
from app.clock import SYSTEM_CLOCK, Clock
from app.limits import hooks as limits
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.webhooks import hooks as webhooks


def install(store: RunStore, settings: Settings, clock: Clock = SYSTEM_CLOCK) -> RunStore:
    """Register every feature's hooks on `store`, reading time from `clock` (the
    composition root's); returns it."""
    forks.install(store)  # (first: its gate answers a replay's calls before any other)
    conversations.install(store)
    approvals.install(RunService(store, settings, clock))
    agents.install(RunService(store, settings, clock))
    schedules.install(RunService(store, settings, clock))
    webhooks.install(store)
    limits.install(store, tenancy.limits_source(store, clock))
    compaction.install(store)
    return store
