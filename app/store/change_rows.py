"""The rows a change writes beside the run: their columns, and what the usage ledger, the
webhook outbox and the pending calls make of a change (shared by PostgreSQL's CTEs and
SQLite's inserts)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core.events import LEDGER_EVENTS, WEBHOOK_EVENTS
from app.store.run_records import NewEvent, NewToolCall
from app.timestamps import iso

LEDGER_COLUMNS = (
    "turn",
    "provider",
    "model",
    "outcome",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
    "total_tokens",
    "cost_usd",
    "price_source",
    "latency_ms",
    "error",
    "http_status",
)
TOOL_CALL_COLUMNS = (
    "round",
    "position",
    "call_id",
    "name",
    "arguments",
    "preresolved",
    "result",
    "submitted_at",
    "queue",
    "lease_owner",
    "lease_token",
    "lease_expires_at",
    "attempts",
    "approval",
    "executed_arguments",
    "approval_requested_at",
    "approval_due_at",
    "decided_by",
    "decided_at",
    "child_run_id",
)
OUTBOX_COLUMNS = (
    "run_id",
    "event_seq",
    "event_type",
    "webhook_id",
    "url",
    "payload",
    "status",
    "attempts",
    "next_attempt_at",
    "created_at",
)


_OUTCOMES = {"model.called": "ok", "model.failed": "error", "model.aborted": "aborted"}


def ledger_row(event: NewEvent) -> dict[str, Any]:
    """The usage-ledger row a model.called / model.failed / model.aborted event stands
    for (outcome ok / error / aborted)."""
    d = event.data
    usage = d.get("usage") or {}
    ok = event.type == "model.called"
    return {
        "turn": int(d.get("turn") or 0),
        "provider": str(d.get("provider") or ""),
        "model": str(d.get("model") or ""),
        "outcome": _OUTCOMES.get(event.type, "error"),
        "input_tokens": int(usage.get("input_tokens", 0)),
        "output_tokens": int(usage.get("output_tokens", 0)),
        "cached_input_tokens": int(usage.get("cached_input_tokens", 0)),
        "reasoning_tokens": int(usage.get("reasoning_tokens", 0)),
        "total_tokens": int(usage.get("total_tokens", 0)),
        "cost_usd": d.get("cost_usd"),
        "price_source": d.get("price_source"),
        "latency_ms": d.get("latency_ms"),
        "error": None if ok else str(d.get("message") or ""),
        "http_status": _http_status(d.get("status")) if not ok else None,
    }


def _http_status(value: Any) -> int | None:
    """A failed call's HTTP status (`model.failed`'s `status`), if it is one."""
    return value if isinstance(value, int) and 100 <= value <= 599 else None


def webhook_payload(event: NewEvent, run_id: str, status: str, now: datetime) -> dict[str, Any]:
    """The event's data with the run's id and status, which win over keys of the same
    name in the data (a failed model call's `status` is its HTTP status)."""
    return {
        "type": event.type,
        "timestamp": iso(now),
        "data": {**event.data, "run_id": run_id, "status": status},
    }


@dataclass(frozen=True, slots=True)
class EventPlan:
    """What a batch of events writes besides the event rows themselves."""

    n: int
    ledger: tuple[int, ...]  # positions of usage-ledger events
    webhooks: tuple[int, ...]  # positions of webhook events

    @classmethod
    def of(cls, events: Sequence[NewEvent]) -> EventPlan:
        return cls(
            len(events),
            tuple(i for i, e in enumerate(events) if e.type in LEDGER_EVENTS),
            tuple(i for i, e in enumerate(events) if e.type in WEBHOOK_EVENTS),
        )


def webhook_targets(config: dict[str, Any], global_url: str | None) -> list[tuple[str, str]]:
    """(webhook id suffix, URL) of each endpoint a run's webhook events go to."""
    targets = []
    url = (config.get("webhook") or {}).get("url")
    if url:
        targets.append(("", str(url)))
    if global_url:
        targets.append(("_g", global_url))
    return targets


def tool_row(c: NewToolCall, round: int | None, now: datetime) -> dict[str, Any]:
    """The `tool_calls` columns of one pending call. A queued call is leasable from
    now on (`lease_expires_at`: see app.toolqueue.sql); a gated call (`approval`
    pending) is in no queue until approved (app.approvals.rows)."""
    queued = c.queue is not None and c.for_executor
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
        "approval": c.approval,
        "executed_arguments": None,
        "approval_requested_at": now if c.approval is not None else None,
        "approval_due_at": c.approval_due_at,
        "decided_by": None,
        "decided_at": None,
        "child_run_id": c.child_run_id,
    }
