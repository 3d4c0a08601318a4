"""SQLite: the rows a change writes beside the run, in the change's own transaction.

On PostgreSQL these are CTEs of the change's one statement (`app.store.statements`);
SQLite has no data-modifying CTEs, so they follow the UPDATE (writers are serialized
there, so nothing can come between).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from app.core.lifecycle import OutboxStatus
from app.core.stored import Batch
from app.store.changes import Answer
from app.store.records import NewEvent, NewToolCall
from app.store.schema import model_calls, run_events, run_messages, tool_calls, webhook_outbox
from app.store.statements import EventPlan, ledger_row, webhook_payload


def webhook_targets(config: dict[str, Any], global_url: str | None) -> list[tuple[str, str]]:
    """(webhook id suffix, URL) of each endpoint a run's webhook events go to."""
    targets = []
    url = (config.get("webhook") or {}).get("url")
    if url:
        targets.append(("", str(url)))
    if global_url:
        targets.append(("_g", global_url))
    return targets


async def write_events(
    conn: AsyncConnection,
    run_id: str,
    last_seq: int,
    events: Sequence[NewEvent],
    now: datetime,
    *,
    status: str | None = None,
    config: dict[str, Any] | None = None,
    global_url: str | None = None,
) -> None:
    """The event rows, their ledger rows and (given the run's status) their outbox rows."""
    if not events:
        return
    first = last_seq - len(events) + 1
    await conn.execute(
        run_events.insert(),
        [
            {
                "run_id": run_id,
                "seq": first + i,
                "type": e.type,
                "data": e.data,
                "actor": e.actor,
                "created_at": now,
            }
            for i, e in enumerate(events)
        ],
    )
    plan = EventPlan.of(events)
    if plan.ledger:
        await conn.execute(
            model_calls.insert(),
            [{"run_id": run_id, "created_at": now, **ledger_row(events[i])} for i in plan.ledger],
        )
    if not plan.webhooks or status is None:
        return
    rows = []
    for i in plan.webhooks:
        payload = webhook_payload(events[i], run_id, status, now)
        for suffix, url in webhook_targets(config or {}, global_url):
            rows.append(
                {
                    "run_id": run_id,
                    "event_seq": first + i,
                    "event_type": events[i].type,
                    "webhook_id": f"msg_{run_id}_{first + i}{suffix}",
                    "url": url,
                    "payload": payload,
                    "status": OutboxStatus.PENDING.value,
                    "attempts": 0,
                    "next_attempt_at": now,
                    "created_at": now,
                }
            )
    if rows:
        await conn.execute(webhook_outbox.insert(), rows)


async def write_rows(
    conn: AsyncConnection,
    run_id: str,
    now: datetime,
    *,
    tool_rows: Sequence[NewToolCall] = (),
    round: int | None = None,
    answers: Sequence[Answer] = (),
    batch: Batch | None = None,
    close: bool = False,
) -> None:
    """A suspension's pending calls (replacing an earlier suspension's at that round),
    submitted answers, the run's log batch; `close`: its unanswered calls leave their
    queue."""
    if tool_rows:
        await conn.execute(
            tool_calls.delete().where(tool_calls.c.run_id == run_id, tool_calls.c.round == round)
        )
        await conn.execute(
            tool_calls.insert(), [{"run_id": run_id, **tool_row(c, round, now)} for c in tool_rows]
        )
    for a in answers:
        await conn.execute(
            tool_calls.update()
            .where(
                tool_calls.c.run_id == run_id,
                tool_calls.c.round == a.round,
                tool_calls.c.position == a.position,
            )
            .values(result=a.result, result_hash=a.result_hash, submitted_at=now)
        )
    if batch is not None:
        await conn.execute(
            run_messages.insert().values(run_id=run_id, seq=batch.seq, body=batch.body)
        )
    if close:
        await conn.execute(
            tool_calls.update()
            .where(
                tool_calls.c.run_id == run_id,
                tool_calls.c.queue.is_not(None),
                tool_calls.c.result_hash.is_(None),
            )
            .values(queue=None)
        )


def tool_row(c: NewToolCall, round: int | None, now: datetime) -> dict[str, Any]:
    """The `tool_calls` columns of one pending call. A queued call is leasable from
    now on (`lease_expires_at`: see app.store.queues)."""
    queued = c.queue is not None and c.preresolved_result is None
    return {
        "round": round,
        "position": c.position,
        "call_id": c.call_id,
        "name": c.name,
        "arguments": c.arguments,
        "preresolved": c.preresolved_result is not None,
        "result": c.preresolved_result,
        "submitted_at": now if c.preresolved_result is not None else None,
        "queue": c.queue if queued else None,
        "lease_owner": None,
        "lease_token": None,
        "lease_expires_at": now if queued else None,
        "attempts": 0,
    }
