"""Outbound webhooks: deliver the outbox, signed per Standard Webhooks, with retries.

Rows reach the outbox in the same transaction as the state change they announce, so a
crash loses none; workers deliver them at least once. `webhook-id` is stable across
retries, so receivers deduplicate. Destinations on private, loopback or link-local
addresses are refused unless the deployment allows them (SSRF guard); redirects are
never followed; every request times out.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import random
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import httpx
import orjson
import structlog
from standardwebhooks import Webhook

from app.providers.backoff import backoff_delay
from app.settings import Settings
from app.store.records import WebhookRecord
from app.store.runs import RunStore

log = structlog.get_logger("agentrun.webhooks")


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


async def refused_destination(url: str, allow_private: bool) -> str | None:
    """Why `url` may not be called (None when it may): scheme, and every address the
    host resolves to must be public unless private destinations are allowed."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"refused destination {url!r}: only http(s) URLs with a host"
    if allow_private:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(parts.hostname, port)
    except OSError as exc:
        return f"cannot resolve {parts.hostname}: {exc}"
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if (
            ip.is_private
            or ip.is_loopback
            or ip.is_link_local
            or ip.is_reserved
            or ip.is_multicast
            or ip.is_unspecified
        ):
            return (
                f"refused destination {parts.hostname} ({ip}): private, loopback or "
                "link-local addresses need AGENTRUN_WEBHOOK_ALLOW_PRIVATE=true"
            )
    return None


class WebhookSender:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        worker_id: str,
        secret: str,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self.worker_id = worker_id
        self.signer = Webhook(secret)
        self.clock = clock
        self.rng = rng or random.Random()
        self.client = httpx.AsyncClient(
            follow_redirects=False, timeout=settings.webhook_timeout, trust_env=False
        )

    async def aclose(self) -> None:
        await self.client.aclose()

    async def deliver_due(self) -> int:
        """Send every due delivery (a batch at a time); how many were attempted."""
        total = 0
        while True:
            now = self.clock()
            lease = now + timedelta(seconds=self.settings.webhook_timeout * 3)
            batch = await self.store.claim_webhooks(now, lease)
            if not batch:
                return total
            await asyncio.gather(*[self._send(d) for d in batch])
            total += len(batch)

    async def _send(self, delivery: WebhookRecord) -> None:
        body = orjson.dumps(delivery.payload).decode()
        sent_at = datetime.now(UTC)  # what receivers check against their own clock
        headers = {
            "content-type": "application/json",
            "user-agent": "agentrun-service",
            "webhook-id": delivery.webhook_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": self.signer.sign(delivery.webhook_id, sent_at, body),
        }
        status_code: int | None = None
        error: str | None = await refused_destination(
            delivery.url, self.settings.webhook_allow_private
        )
        started = time.perf_counter()
        if error is None:
            try:
                response = await self.client.post(delivery.url, content=body, headers=headers)
                status_code = response.status_code
                if not 200 <= status_code < 300:
                    error = f"HTTP {status_code}" + (
                        " (redirects are not followed)" if 300 <= status_code < 400 else ""
                    )
            except httpx.HTTPError as exc:
                error = f"{type(exc).__name__}: {exc}"
        latency_ms = round((time.perf_counter() - started) * 1000, 2)
        now = self.clock()
        retry_at = None
        if error is not None:
            age = (now - delivery.created_at).total_seconds()
            if (
                delivery.attempts < self.settings.webhook_max_attempts
                and age < self.settings.webhook_max_age_seconds
            ):
                delay = backoff_delay(delivery.attempts, base=1.0, cap=3600.0, rand=self.rng.random)
                retry_at = now + timedelta(seconds=delay)
            log.info(
                "webhook delivery failed",
                webhook_id=delivery.webhook_id,
                attempt=delivery.attempts,
                error=error,
                retry=retry_at is not None,
            )
        await self.store.finish_webhook(
            delivery,
            status_code=status_code,
            error=error,
            latency_ms=latency_ms,
            next_attempt_at=retry_at,
            worker=self.worker_id,
            now=now,
        )
