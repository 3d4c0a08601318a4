"""Outbound webhooks: deliver the outbox, signed per Standard Webhooks, with retries.

Rows reach the outbox in the same transaction as the state change they announce, so a
crash loses none; workers deliver them at least once. `webhook-id` is stable across
retries, so receivers deduplicate. Destinations are checked before every delivery and
the request connects to the address that was checked (`app.webhooks.destinations`, the
SSRF guard); redirects are never followed; every request times out.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import random
import secrets
from datetime import timedelta

import httpx
import orjson
import structlog
from opentelemetry.trace import SpanKind
from standardwebhooks import Webhook

from app import metrics, tracing
from app.clock import Clock
from app.providers.backoff import backoff_delay
from app.settings import Settings
from app.store.run_records import WebhookRecord
from app.store.runs import RunStore
from app.webhooks.destinations import (
    Destination,
    DestinationRefused,
    DestinationUnresolved,
    Resolver,
    check_destination,
    system_resolver,
)
from app.webhooks.outbox import Outbox

log = structlog.get_logger("agentrun.webhooks")


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


class WebhookSender:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        worker_id: str,
        secret: str,
        *,
        clock: Clock,
        rng: random.Random | None = None,
        resolver: Resolver = system_resolver,
    ) -> None:
        self.resolver = resolver
        self.store = store
        self.outbox = Outbox(store.backend)
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

    async def run(self, woken: asyncio.Event) -> None:
        """Deliver what is due, then again when woken (a commit wrote outbox rows) or
        after a poll (the poll interval without NOTIFY), until cancelled."""
        timeout = self.settings.poll_interval if not self.store.notifies else 1.0
        while True:
            try:
                await self.deliver_due()
            except Exception:
                log.exception("webhook delivery loop failed")
            with contextlib.suppress(TimeoutError):  # (not wait_for: see app.worker.worker)
                async with asyncio.timeout(timeout):
                    await woken.wait()
            woken.clear()

    async def deliver_due(self) -> int:
        """Send every due delivery (a batch at a time); how many were attempted."""
        total = 0
        while True:
            now = self.clock.now()
            lease = now + timedelta(seconds=self.settings.webhook_timeout * 3)
            batch = await self.outbox.claim_webhooks(now, lease)
            if not batch:
                return total
            traces: dict[str, dict[str, str]] = {}
            if tracing.ENABLED:  # each delivery joins its run's trace
                traces = await self.outbox.trace_contexts({d.run_id for d in batch})
            await asyncio.gather(*[self._send(d, traces.get(d.run_id, {})) for d in batch])
            total += len(batch)

    async def _send(self, delivery: WebhookRecord, trace: dict[str, str]) -> None:
        body = orjson.dumps(delivery.payload).decode()
        sent_at = self.clock.now()  # what receivers check against their own clock
        headers = {
            "content-type": "application/json",
            "user-agent": "agentrun-service",
            "webhook-id": delivery.webhook_id,
            "webhook-timestamp": str(int(sent_at.timestamp())),
            "webhook-signature": self.signer.sign(delivery.webhook_id, sent_at, body),
        }
        status_code: int | None = None
        error: str | None = None
        started = self.clock.monotonic()
        with tracing.span(
            "agentrun.webhook.deliver",
            lambda: tracing.webhook_attributes(delivery),
            parent=trace,
            kind=SpanKind.CLIENT,
        ) as span:
            if span is not None:  # the receiver may join the trace
                headers.update(tracing.carrier())
            try:
                destination = await check_destination(
                    delivery.url,
                    allow_private=self.settings.webhook_allow_private,
                    resolve=self.resolver,
                )
                response = await self._post(destination, body, headers)
                status_code = response.status_code
                if not 200 <= status_code < 300:
                    error = f"HTTP {status_code}" + (
                        " (redirects are not followed)" if 300 <= status_code < 400 else ""
                    )
            except DestinationRefused as exc:
                error = f"refused destination: {exc}"
            except (DestinationUnresolved, httpx.HTTPError) as exc:
                error = f"{type(exc).__name__}: {exc}"
            tracing.webhook_answered(span, status_code, error)
        seconds = self.clock.monotonic() - started
        latency_ms = round(seconds * 1000, 2)
        now = self.clock.now()
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
        metrics.webhook_attempt(error is None, seconds, gave_up=retry_at is None)
        await self.outbox.finish_webhook(
            delivery,
            status_code=status_code,
            error=error,
            latency_ms=latency_ms,
            next_attempt_at=retry_at,
            worker=self.worker_id,
            now=now,
        )

    async def _post(
        self, destination: Destination, body: str, headers: dict[str, str]
    ) -> httpx.Response:
        """POST to the checked addresses in turn (the next one only when connecting to
        one failed): the URL's host is replaced by the address, the name stays in `Host`
        and, for https, in SNI and the certificate check."""
        url = httpx.URL(destination.url)
        extensions = {"sni_hostname": url.host} if url.scheme == "https" else {}
        headers = {**headers, "host": url.netloc.decode("ascii")}
        for i, address in enumerate(destination.addresses):
            try:
                return await self.client.post(
                    url.copy_with(host=address), content=body, headers=headers,
                    extensions=extensions,
                )  # fmt: skip
            except httpx.ConnectError:
                if i == len(destination.addresses) - 1:
                    raise
        raise AssertionError("a destination has at least one address")
