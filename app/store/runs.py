"""The run store: one backend (`app.store.backend`: what differs between PostgreSQL and
SQLite) and the repositories composed around it, one per concern; `RunStore` exposes
their methods so the service and the worker hold one object.

- `transitions` (`app.store.transitions`): create, apply a change, claim, sweeps;
- `lookups` (`app.store.run_reads`): runs, their pending calls, events, counts, secrets;
- `watchers` (`app.store.watchers`): which runs live streams watch;
- `trees` (`app.store.trees`): a run's children and descendants, a tree's spend.

Features build their own repositories from `backend`: the webhook outbox's
(`app.webhooks.outbox`), the tool-call queue's (`app.toolqueue.sql`), the shared
limits' buckets and slots (`app.limits.shared`).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.backend.base import (
    EVENTS_CHANNEL,
    NOTIFY_CHANNEL,
    QUEUE_CHANNEL,
    STOP_CHANNEL,
    WEBHOOKS_CHANNEL,
    Backend,
)
from app.store.backend.factory import backend_for
from app.store.errors import NotFoundError
from app.store.hooks import Hooks
from app.store.run_reads import Lookups
from app.store.transitions import Transitions
from app.store.trees import Trees
from app.store.watchers import Watchers

__all__ = [
    "EVENTS_CHANNEL",
    "NOTIFY_CHANNEL",
    "QUEUE_CHANNEL",
    "STOP_CHANNEL",
    "WEBHOOKS_CHANNEL",
    "NotFoundError",
    "RunStore",
]


class RunStore:
    def __init__(
        self,
        engine: AsyncEngine,
        *,
        webhook_url: str | None = None,
        backend: Backend | None = None,
        hooks: Hooks | None = None,
    ) -> None:
        self.backend = backend or backend_for(engine, webhook_url=webhook_url)
        self.engine = engine  # (reports, usage and retention query it themselves)
        self.webhook_url = webhook_url  # the deployment's global endpoint, if any
        #: Whether writes wake listeners (NOTIFY); without it, workers and streams poll.
        self.notifies = self.backend.notifies

        #: The features' hooks on this store's writes (`app.store.hooks`).
        self.hooks = hooks or Hooks()
        self.transitions = t = Transitions(self.backend, self.hooks)
        self.create, self.apply = t.create, t.apply
        self.claim, self.claim_many = t.claim, t.claim_many
        self.heartbeat, self.append_events = t.heartbeat, t.append_events
        self.reap_expired_leases, self.expire_suspended = t.reap_expired_leases, t.expire_suspended
        self.cancel_tree = t.cancel_tree
        self.create_joined, self.created = t.create_joined, t.created

        self.trees = Trees(self.backend)  # (children, descendants, a tree's spend)

        self.lookups = r = Lookups(self.backend)
        self.get, self.list_runs, self.events = r.get, r.list_runs, r.events
        self.fences, self.queue_ahead = r.fences, r.queue_ahead
        self.tool_calls, self.pending_calls, self.pending = r.tool_calls, r.pending_calls, r.pending
        self.count_by_status, self.usage_totals, self.secret = (
            r.count_by_status,
            r.usage_totals,
            r.secret,
        )

        self.watchers = w = Watchers(self.backend)
        self.watch, self.unwatch, self.watched = w.watch, w.unwatch, w.watched

    async def flush_wakeups(self) -> None:
        """Return once the wake-ups of the writes so far are sent."""
        await self.backend.flush()

    async def aclose(self) -> None:
        """Send pending wake-ups and release the backend's connections (the engine's
        pool with them)."""
        await self.backend.aclose()
