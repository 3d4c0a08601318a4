"""What the webhooks feature plugs into the kernel: the sender, as a worker's background
loop (`app.store.hooks.Background`) woken by the outbox's NOTIFY."""

from __future__ import annotations

from app.clock import Clock
from app.settings import Settings
from app.store.backend.base import WEBHOOKS_CHANNEL
from app.store.hooks import Background
from app.store.runs import RunStore
from app.webhooks.sender import WebhookSender, new_secret


def install(store: RunStore) -> None:
    """Have each worker of `store` run a sender with the worker's settings, signing with
    the deployment's secret (AGENTRUN_WEBHOOK_SECRET, else one the database keeps)."""

    async def open_sender(worker_id: str, settings: Settings, clock: Clock) -> WebhookSender:
        secret = settings.webhook_secret or await store.secret("webhook_secret", new_secret)
        return WebhookSender(store, settings, worker_id, secret, clock=clock)

    store.hooks.add_background(Background("webhooks", open_sender, WEBHOOKS_CHANNEL))
