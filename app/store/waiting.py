"""Why a run is where it is: the typed `waiting_reason` of a change (`app.store.changes`),
read back typed (`parse`, once, where the row is parsed: `app.store.run_records`), and, for the
reasons a write leaves out (a queued run's, a claimed run's), the reason given back on read
from the run's status and lease (`derived`). `doc()` is the JSON the API shows; `parse`
and `doc` are inverse (tests/store/test_records.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from app.core.lifecycle import RunStatus
from app.timestamps import iso


@dataclass(frozen=True, slots=True)
class Queued:
    def doc(self) -> dict[str, Any]:
        return {"type": RunStatus.QUEUED.value}


@dataclass(frozen=True, slots=True)
class ModelCall:
    worker: str
    lease_until: datetime

    def doc(self) -> dict[str, Any]:
        return {"type": "model_call", "worker": self.worker, "lease_until": iso(self.lease_until)}


@dataclass(frozen=True, slots=True)
class ToolResults:
    round: int
    call_ids: tuple[str, ...]

    def doc(self) -> dict[str, Any]:
        return {"type": "tool_results", "round": self.round, "call_ids": list(self.call_ids)}


@dataclass(frozen=True, slots=True)
class Approval:
    """Gated calls of a round await a decision (`approvals`); `call_ids` are the open
    calls of the round handed out meanwhile (ungated, or approved)."""

    round: int
    call_ids: tuple[str, ...]
    approvals: tuple[str, ...]

    def doc(self) -> dict[str, Any]:
        return {
            "type": "approval",
            "round": self.round,
            "call_ids": list(self.call_ids),
            "approvals": list(self.approvals),
        }


@dataclass(frozen=True, slots=True)
class Resolution:
    tool_name: str
    tool_call_id: str | None
    arguments: str

    def doc(self) -> dict[str, Any]:
        return {
            "type": "resolution",
            "tool_name": self.tool_name,
            "tool_call_id": self.tool_call_id,
            "arguments": self.arguments,
        }


@dataclass(frozen=True, slots=True)
class Backoff:
    """A run waiting to retry a model call: which attempt failed and how, when the next
    starts, and why then (the provider's `Retry-After`, a rate limit's reset, or
    exponential backoff)."""

    until: datetime
    delay_seconds: float
    reason: str
    attempt: int
    max_attempts: int
    error: Mapping[str, Any]
    hint_seconds: float | None = None
    header: str | None = None

    def doc(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "type": "backoff",
            "until": iso(self.until),
            "delay_seconds": round(self.delay_seconds, 3),
            "reason": self.reason,
            "attempt": self.attempt,
            "max_attempts": self.max_attempts,
            "status": self.error.get("status"),
            "error": dict(self.error),
        }
        if self.hint_seconds is not None:
            out["provider_hint_seconds"] = round(self.hint_seconds, 3)
            out["header"] = self.header
        return out


@dataclass(frozen=True, slots=True)
class Budget:
    """A run suspended before a model call that could pass one of its limits: which limit
    (`max_total_tokens`, `max_cost_usd`, `max_model_calls`, `max_duration_seconds`, or a
    day's `daily_tokens` / `daily_cost_usd`), whose (`scope`: run, tenant, deployment), what
    was spent, what is allowed, and what the next call needed at least (`needed`)."""

    limit: str
    spent: float
    allowed: float
    scope: str = "run"
    needed: float | None = None

    def doc(self) -> dict[str, Any]:
        return {
            "type": "budget",
            "limit": self.limit,
            "scope": self.scope,
            "spent": self.spent,
            "allowed": self.allowed,
            "needed": self.needed,
        }


#: How far off a run waiting for its conversation is due: never, until it is started.
NEVER = timedelta(days=36500)


@dataclass(frozen=True, slots=True)
class Conversation:
    """A run created with `if_busy: enqueue`: it starts when `run_id`, the latest run of
    its conversation when it was created, ends (app.conversations)."""

    run_id: str

    def doc(self) -> dict[str, Any]:
        return {"type": "conversation", "run_id": self.run_id}


@dataclass(frozen=True, slots=True)
class RateLimit:
    """A run a shared limit deferred before its model call (app.limits.rates): which limit
    (`requests_per_minute`, `tokens_per_minute`, `max_concurrent`, `provider_429`), whose
    (`key`: `profile:<p>`, `model:<p>/<m>`, `tenant:<t>`), and when its reserved call may
    go (`frees_at`; None: when a slot is released)."""

    limit: str
    key: str
    frees_at: datetime | None

    def doc(self) -> dict[str, Any]:
        return {
            "type": "rate_limit",
            "limit": self.limit,
            "key": self.key,
            "frees_at": None if self.frees_at is None else iso(self.frees_at),
        }


Waiting = (
    Queued
    | ModelCall
    | ToolResults
    | Approval
    | Resolution
    | Backoff
    | Budget
    | Conversation
    | RateLimit
)


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


def parse(doc: Mapping[str, Any]) -> Waiting:
    """The typed reason of a stored `waiting_reason` document (`doc()`'s inverse)."""
    kind = doc["type"]
    if kind == "tool_results":
        return ToolResults(int(doc["round"]), tuple(doc["call_ids"]))
    if kind == "approval":
        return Approval(int(doc["round"]), tuple(doc["call_ids"]), tuple(doc["approvals"]))
    if kind == "resolution":
        return Resolution(doc["tool_name"], doc["tool_call_id"], doc["arguments"])
    if kind == "backoff":
        return Backoff(
            until=_instant(doc["until"]),
            delay_seconds=doc["delay_seconds"],
            reason=doc["reason"],
            attempt=doc["attempt"],
            max_attempts=doc["max_attempts"],
            error=doc["error"],
            hint_seconds=doc.get("provider_hint_seconds"),
            header=doc.get("header"),
        )
    if kind == "budget":
        return Budget(doc["limit"], doc["spent"], doc["allowed"], doc["scope"], doc.get("needed"))
    if kind == "conversation":
        return Conversation(doc["run_id"])
    if kind == "rate_limit":
        frees = doc.get("frees_at")
        return RateLimit(doc["limit"], doc["key"], None if frees is None else _instant(frees))
    if kind == "model_call":  # (stored by releases before 0009; derived since)
        return ModelCall(doc["worker"], _instant(doc["lease_until"]))
    if kind == RunStatus.QUEUED.value:
        return Queued()
    raise ValueError(f"unknown waiting reason {kind!r}")


def derived(
    status: RunStatus, lease_owner: str | None, lease_expires_at: datetime | None
) -> Waiting | None:
    """The reason a change left out (`app.store.changes`), from the run's status and lease."""
    if status is RunStatus.QUEUED:
        return Queued()
    if status is RunStatus.RUNNING and lease_owner is not None and lease_expires_at is not None:
        return ModelCall(lease_owner, lease_expires_at)
    return None
