"""The webhook outbox: deliveries written with the change they announce (by the
change's own write, `app.store.backend`), claimed and finished by the workers'
senders, read by the dashboard and the API."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.lifecycle import OutboxStatus
from app.store.backend.base import Backend
from app.store.run_records import WebhookRecord
from app.store.schema import run_configs, webhook_attempts, webhook_outbox


class Outbox:
    """The webhook senders' side of the outbox, and its reads."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def claim_webhooks(
        self, now: datetime, lease_until: datetime, limit: int = 20
    ) -> list[WebhookRecord]:
        """Take due deliveries; pushing `next_attempt_at` to the lease end keeps another
        worker off them while they are in flight (a crashed sender's rows come back)."""
        due = (
            sa.select(webhook_outbox.c.id)
            .where(
                webhook_outbox.c.status == OutboxStatus.PENDING.value,
                webhook_outbox.c.next_attempt_at <= now,
            )
            .order_by(webhook_outbox.c.next_attempt_at, webhook_outbox.c.id)
            .limit(limit)
        )
        due = self.backend.skip_locked(due)
        stmt = (
            webhook_outbox.update()
            .where(webhook_outbox.c.id.in_(due.scalar_subquery()))
            .values(attempts=webhook_outbox.c.attempts + 1, next_attempt_at=lease_until)
            .returning(*webhook_outbox.c)
        )
        async with self.backend.atomic() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [WebhookRecord.from_row(r) for r in rows]

    async def trace_contexts(self, run_ids: Iterable[str]) -> dict[str, dict[str, str]]:
        """The stored trace context (`config["trace"]`, app.tracing) of each run that has
        one; read only while tracing is on."""
        stmt = sa.select(run_configs.c.run_id, run_configs.c.config["trace"].label("trace")).where(
            run_configs.c.run_id.in_(list(run_ids))
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return {r.run_id: r.trace for r in rows if isinstance(r.trace, dict)}

    async def finish_webhook(
        self,
        delivery: WebhookRecord,
        *,
        status_code: int | None,
        error: str | None,
        latency_ms: float,
        next_attempt_at: datetime | None,
        worker: str,
        now: datetime,
    ) -> None:
        """Log the attempt; the delivery is delivered (2xx), retried later, or failed."""
        delivered = status_code is not None and 200 <= status_code < 300
        if delivered:
            state, due = OutboxStatus.DELIVERED, delivery.next_attempt_at
        elif next_attempt_at is not None:
            state, due = OutboxStatus.PENDING, next_attempt_at
        else:
            state, due = OutboxStatus.FAILED, delivery.next_attempt_at
        async with self.backend.transaction() as conn:
            await conn.execute(
                webhook_attempts.insert().values(
                    outbox_id=delivery.id,
                    attempt=delivery.attempts,
                    status_code=status_code,
                    error=error,
                    latency_ms=latency_ms,
                    worker=worker,
                    created_at=now,
                )
            )
            await conn.execute(
                webhook_outbox.update()
                .where(webhook_outbox.c.id == delivery.id)
                .values(
                    status=state.value,
                    next_attempt_at=due,
                    last_status=status_code,
                    last_error=error,
                    last_latency_ms=latency_ms,
                    delivered_at=now if delivered else None,
                )
            )

    async def webhook_deliveries(self, run_id: str) -> list[dict[str, Any]]:
        """A run's deliveries with their latest outcome (for the dashboard and the API)."""
        stmt = (
            webhook_outbox.select()
            .where(webhook_outbox.c.run_id == run_id)
            .order_by(webhook_outbox.c.id)
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        keys = (
            "event_type",
            "webhook_id",
            "url",
            "status",
            "attempts",
            "last_status",
            "last_error",
            "last_latency_ms",
            "created_at",
            "delivered_at",
        )
        out = []
        for row in rows:
            record = WebhookRecord.from_row(row)
            out.append({k: getattr(record, k) for k in keys})
        return out

    async def webhook_attempts(self, webhook_id: str) -> list[dict[str, Any]]:
        stmt = (
            sa.select(webhook_attempts)
            .join(webhook_outbox, webhook_outbox.c.id == webhook_attempts.c.outbox_id)
            .where(webhook_outbox.c.webhook_id == webhook_id)
            .order_by(webhook_attempts.c.attempt)
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [dict(r._mapping) for r in rows]
