"""What the webhooks feature plugs into the kernel: the check of a run's webhook URL at
create (`app.store.hooks.Hooks.async_create_checks`: the SSRF guard), and the sender, as
a worker's background loop (`app.store.hooks.Background`) woken by the outbox's NOTIFY."""

from __future__ import annotations

from app.clock import Clock
from app.service.errors import InvalidRequest
from app.settings import Settings
from app.store.backend.base import WEBHOOKS_CHANNEL
from app.store.hooks import AsyncCreateCheck, Background, Creating
from app.store.runs import RunStore
from app.webhooks.destinations import (
    DestinationRefused,
    DestinationUnresolved,
    Resolver,
    check_destination,
    system_resolver,
)
from app.webhooks.sender import WebhookSender, new_secret


def destination_check(resolver: Resolver = system_resolver) -> AsyncCreateCheck:
    """Refuse a destination no delivery could reach (SSRF guard, unresolvable host);
    a resolver that cannot answer now is not the client's fault: deliveries check
    again."""

    async def check(create: Creating) -> None:
        if create.agent["webhook"] is None:
            return
        try:
            await check_destination(
                create.agent["webhook"]["url"],
                allow_private=create.settings.webhook_allow_private,
                resolve=resolver,
            )
        except DestinationRefused as exc:
            raise InvalidRequest(f"webhook.url: {exc}") from None
        except DestinationUnresolved:
            pass

    return check


def install(store: RunStore, resolver: Resolver = system_resolver) -> None:
    """Check each created run's webhook URL (resolving names with `resolver`); have each
    worker of `store` run a sender with the worker's settings, signing with the
    deployment's secret (AGENTRUN_WEBHOOK_SECRET, else one the database keeps)."""

    async def open_sender(worker_id: str, settings: Settings, clock: Clock) -> WebhookSender:
        secret = settings.webhook_secret or await store.secret("webhook_secret", new_secret)
        return WebhookSender(store, settings, worker_id, secret, clock=clock)

    store.hooks.on_create_async(destination_check(resolver))
    store.hooks.add_background(Background("webhooks", open_sender, WEBHOOKS_CHANNEL))
