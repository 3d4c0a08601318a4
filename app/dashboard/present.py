"""Presentation helpers: durations, previews, the conversation as plain dicts for the
templates, the event timeline with latencies, and the SVG bar charts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson

from app.approvals import policies
from app.core import (
    AgentRun,
    AssistantMessage,
    Image,
    Json,
    Message,
    Reasoning,
    SystemMessage,
    Text,
    ToolCall,
    ToolResult,
)
from app.core.events import EventType
from app.core.jsonvalue import thaw
from app.service import lineage
from app.service.types import EventRecord, RunRecord, ToolCallRecord


def duration(seconds: float | None) -> str:
    """`2h 05m`, `3m 07s`, `12s`, `850 ms`."""
    if seconds is None:
        return "—"
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:.0f} ms"
    whole = int(s)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{sign}{days}d {hours:02d}h"
    if hours:
        return f"{sign}{hours}h {minutes:02d}m"
    if minutes:
        return f"{sign}{minutes}m {secs:02d}s"
    return f"{sign}{secs}s"


def timestamp(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def zoned(value: datetime | None) -> str:
    """A time in its own zone: `2026-03-02 06:00:00 CET (+01:00)`."""
    if value is None:
        return "—"
    shown = value.strftime("%Y-%m-%d %H:%M:%S")
    if value.tzinfo is None:
        return shown
    offset = value.strftime("%z")  # +0100
    return f"{shown} {value.tzname()} ({offset[:3]}:{offset[3:5]})"


def to_json(value: Any, *, indent: bool = False) -> str:
    option = orjson.OPT_INDENT_2 if indent else 0
    try:
        return orjson.dumps(thaw(value), option=option | orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return repr(value)


def preview(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else to_json(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class ScheduleMark:
    """The schedule tick that started a run: the schedule's key and the tick's time."""

    key: str
    scheduled_time: datetime | None


def schedule_mark(record: RunRecord) -> ScheduleMark | None:
    """What the run's `schedule` mark says (`app.service.lineage.schedule_of`), if any."""
    mark = lineage.schedule_of(record)
    if mark is None or not isinstance(mark["key"], str):
        return None
    at = mark["scheduled_time"]
    try:
        when = datetime.fromisoformat(at) if isinstance(at, str) else None
    except ValueError:
        when = None
    return ScheduleMark(mark["key"], when)


#: How the dashboard names the open protocols a run may have been started over.
PROTOCOLS = {"a2a": "A2A", "ag-ui": "AG-UI"}


#: What each kind of checkpoint is, on the run's page (app.forks.checkpoints).
CHECKPOINT_KINDS = {
    "start": "its start: the history and the prompt",
    "tool_calls": "the model's calls: a fork waits for their results again",
    "tool_results": "the round's results: a fork asks the model next",
    "answer": "the model's answer: a fork needs a message to go on",
}


def origin_label(record: RunRecord) -> str | None:
    """`A2A`, or `AG-UI (<thread id>)`, when the run
    was started over an open protocol (`app.service.lineage.origin_of`)."""
    origin = lineage.origin_of(record)
    if origin is None:
        return None
    name = PROTOCOLS.get(str(origin["protocol"]), str(origin["protocol"]))
    thread = origin.get("thread_id")
    return f"{name} ({thread})" if isinstance(thread, str) else name


# --- the runs table --------------------------------------------------------------------


def agent_label(record: RunRecord) -> str | None:
    """`name@version` of the named agent the run started from, if it did."""
    agent = lineage.agent_of(record)
    return None if agent is None else f"{agent.get('name')}@{agent.get('version')}"


@dataclass(frozen=True, slots=True)
class Row:
    record: RunRecord
    pending: list[ToolCallRecord]
    waiting_for: float | None  # seconds since it suspended
    expires_in: float | None  # seconds left; negative: overdue
    prompt: str | None = None  # its prompt's text (`RunReads.prompts`)

    @property
    def model(self) -> str:
        spec = self.record.config.get("model") or {}
        return f"{spec.get('provider', '?')}/{spec.get('name', '?')}"

    @property
    def agent(self) -> str | None:
        return agent_label(self.record)

    @property
    def tree_root(self) -> str | None:
        """The root of the run's tree (whose page lists the tree), if it is in one."""
        return lineage.tree_of(self.record)["root_run_id"] if lineage.in_tree(self.record) else None

    @property
    def schedule(self) -> ScheduleMark | None:
        return schedule_mark(self.record)

    @property
    def age(self) -> float:
        return self.waiting_for if self.waiting_for is not None else 0.0

    @property
    def reason(self) -> str:
        return waiting_reason_text(self.record.waiting_reason)

    @property
    def open_calls(self) -> list[ToolCallRecord]:
        """Those an executor (or an operator) may answer: not answered, not gated."""
        return [
            c
            for c in self.pending
            if c.result_hash is None and not c.preresolved and not c.awaits_approval
        ]

    @property
    def gated_calls(self) -> list[ToolCallRecord]:
        return [c for c in self.pending if c.awaits_approval]


def waiting_reason_text(reason: dict[str, Any] | None) -> str:
    if not reason:
        return "—"
    kind = str(reason.get("type", "?"))
    if kind == "tool_results":
        n = len(reason.get("call_ids") or [])
        return f"tool results ({n} open)"
    if kind == "resolution":
        return f"resolve invalid call to `{reason.get('tool_name')}`"
    if kind == "approval":
        n = len(reason.get("approvals") or [])
        return f"approval ({n} call{'s' if n != 1 else ''} to decide)"
    if kind == "backoff":
        return backoff_text(reason)
    if kind == "budget":
        return (
            f"budget: {reason.get('scope')} limit {reason.get('limit')}, "
            f"{reason.get('spent')} spent of {reason.get('allowed')}"
        )
    if kind == "model_call":
        return f"model call on {reason.get('worker')}"
    if kind == "conversation":
        return f"its conversation: run {reason.get('run_id')} to end"
    if kind == "rate_limit":
        frees = reason.get("frees_at")
        when = f"its turn at {frees}" if frees else "a slot to free"
        return f"shared limit {reason.get('limit')} of {reason.get('key')}: {when}"
    return kind.replace("_", " ")


_WHY = {
    "retry_after": "the provider's {header}",
    "rate_limit_reset": "rate limit resets ({header})",
    "backoff": "exponential backoff",
}


def backoff_text(reason: dict[str, Any]) -> str:
    """E.g. "retry at 2026-…Z, attempt 2 of 8 failed (HTTP 429): rate limit resets
    (x-ratelimit-reset-tokens)". Reasons stored before they said why show less."""
    attempt = f"attempt {reason.get('attempt')}"
    if reason.get("max_attempts"):
        attempt += f" of {reason['max_attempts']}"
    status = reason.get("status")
    failed = f"{attempt} failed" + (f" (HTTP {status})" if status else "")
    why = _WHY.get(str(reason.get("reason")), "")
    why = why.format(header=reason.get("header") or "Retry-After")
    return f"retry at {reason.get('until')}, {failed}" + (f": {why}" if why else "")


# --- approvals ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pending:
    """A gated call as the pages show it: the hash its forms carry, its age and the time
    left before its run's `approval_on_timeout` decides it."""

    call: ToolCallRecord
    arguments_hash: str
    age: float | None
    due_in: float | None

    @property
    def run_id(self) -> str:
        return self.call.run_id


def pending_of(calls: list[ToolCallRecord], at: datetime) -> list[Pending]:
    out = []
    for c in calls:
        since = c.approval_requested_at
        out.append(
            Pending(
                c,
                policies.arguments_hash(c.arguments),
                (at - since).total_seconds() if since is not None else None,
                (c.approval_due_at - at).total_seconds() if c.approval_due_at else None,
            )
        )
    return out


# --- the conversation ------------------------------------------------------------------


def conversation(record: RunRecord, run: AgentRun) -> list[dict[str, Any]]:
    """The run's messages (history first) as dicts."""
    new = run.messages()
    history = run.full_history()[: len(run.full_history()) - len(new)]
    out: list[dict[str, Any]] = []
    preamble = record.config.get("preamble")
    if preamble:
        out.append({"role": "preamble", "from_history": False, "items": [_text(preamble)]})
    out.extend(_message(m, True) for m in history)
    out.extend(_message(m, False) for m in new)
    for seq, message in enumerate(out[1:] if preamble else out, start=1):
        message["seq"] = seq  # (messages up to it: a checkpoint after it has this `seq`)
    return out


def _text(text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text}


def _message(message: Message, from_history: bool) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "from_history": from_history, "items": [_text(message.content)]}
    role = "assistant" if isinstance(message, AssistantMessage) else "user"
    return {
        "role": role,
        "from_history": from_history,
        "items": [_item(i) for i in message.content],
    }


def _item(item: Any) -> dict[str, Any]:
    if isinstance(item, Text):
        return _text(item.text)
    if isinstance(item, ToolCall):
        return {
            "kind": "tool_call",
            "id": item.id,
            "name": item.name,
            "arguments": to_json(item.arguments, indent=True),
        }
    if isinstance(item, ToolResult):
        return {
            "kind": "tool_result",
            "id": item.call_id,
            "name": item.name,
            "content": "\n".join(_result_text(c) for c in item.content),
        }
    if isinstance(item, Reasoning):
        blocks = []
        for b in item.content:
            if b.kind in ("encrypted", "redacted"):
                blocks.append(f"[{b.kind}, {len(b.text)} characters]")
            else:
                blocks.append(b.text)
        return {"kind": "reasoning", "text": "\n\n".join(blocks)}
    if isinstance(item, Image):
        return {"kind": "image", "text": f"[image {item.media_type or ''}]"}
    return _text(repr(item))


def _result_text(content: Any) -> str:
    if isinstance(content, Text):
        return content.text
    if isinstance(content, Json):
        return to_json(content.value, indent=True)
    if isinstance(content, Image):
        return f"[image {content.media_type or ''}]"
    return repr(content)


def continued_by(events: Sequence[EventRecord]) -> list[str]:
    """The runs that continued this one (its `run.continued` events), oldest first."""
    return [
        str(e.data["run_id"])
        for e in events
        if e.type == EventType.RUN_CONTINUED and isinstance(e.data.get("run_id"), str)
    ]


# --- the event timeline ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    event: EventRecord
    since_previous: float | None
    since_start: float
    data: str
    latency_ms: float | None  # reported by the event itself (model calls)
    shown: Any  # the event's data as the page shows it (`data` is its JSON)


#: What stands for a callback URL on the page of someone who may not answer tool calls:
#: the URL answers them without a key.
HIDDEN_CALLBACK = "(hidden: your role may not submit tool results)"


def timeline(events: Sequence[EventRecord], *, callbacks: bool = True) -> list[TimelineEntry]:
    """The events with their timings; without `callbacks`, callback URLs are hidden."""
    out: list[TimelineEntry] = []
    start = events[0].created_at if events else None
    previous: datetime | None = None
    for e in events:
        assert start is not None
        latency = e.data.get("latency_ms") if isinstance(e.data, dict) else None
        shown = e.data
        if not callbacks and isinstance(shown, dict) and "callback_url" in shown:
            shown = {**shown, "callback_url": HIDDEN_CALLBACK}
        out.append(
            TimelineEntry(
                e,
                (e.created_at - previous).total_seconds() if previous is not None else None,
                (e.created_at - start).total_seconds(),
                to_json(shown) if shown else "",
                float(latency) if isinstance(latency, int | float) else None,
                shown,
            )
        )
        previous = e.created_at
    return out


# --- charts ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: int
    x: float
    y: float
    width: float
    height: float


def bars(
    series: Sequence[tuple[str, int]], *, width: float = 420, height: float = 140
) -> list[Bar]:
    """Geometry of a bar chart (the template draws it as SVG rects)."""
    if not series:
        return []
    top = max(v for _, v in series) or 1
    slot = width / len(series)
    plot = height - 20  # room for the labels underneath
    out = []
    for i, (label, value) in enumerate(series):
        h = plot * value / top
        out.append(Bar(label, value, i * slot + slot * 0.15, plot - h, slot * 0.7, h))
    return out
