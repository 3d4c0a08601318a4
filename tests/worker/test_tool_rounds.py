"""A tool round as data (app.worker.tool_rounds): the rows a suspension writes, the calls
the run's approval policies gate, and what the executor is handed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import structlog.testing

from app.core import CallTools, Text, ToolCall, ToolResult
from app.core.types import PendingToolCall
from app.store.config import RunConfig
from app.worker import tool_rounds

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def config(**doc: Any) -> RunConfig:
    return RunConfig.parse({"model": {"provider": "scripted", "name": "demo"}, **doc})


def step() -> CallTools:
    own = ToolResult("call_c", "lookup", (Text("cached"),))
    return CallTools(
        (
            PendingToolCall(ToolCall.from_wire("call_a", "wire", {"amount": 900})),
            PendingToolCall(ToolCall.from_wire("call_b", "lookup", {"q": "rates"})),
            PendingToolCall(ToolCall.from_wire("call_c", "lookup", {"q": "x"}), own),
        )
    )


TOOLS = [
    {"name": "wire", "parameters": {"type": "object"}, "queue": "payments"},
    {"name": "lookup", "parameters": {"type": "object"}},
]


def test_rows_keep_the_runs_order_queues_and_its_own_results() -> None:
    rows = tool_rounds.rows(step(), config(tools=TOOLS, tool_queue="general"))
    assert [(r.position, r.call_id, r.name) for r in rows] == [
        (0, "call_a", "wire"),
        (1, "call_b", "lookup"),
        (2, "call_c", "lookup"),
    ]
    assert [r.queue for r in rows] == ["payments", "general", None]  # (its own: no queue)
    assert rows[2].preresolved_result is not None and rows[0].preresolved_result is None


def test_a_gated_call_leaves_its_queue_waits_until_its_deadline_and_is_not_handed_out() -> None:
    gated_tools = [{**TOOLS[0], "approval": {"when": {"required": ["amount"]}}}, TOOLS[1]]
    cfg = config(tools=gated_tools, approval_timeout=60)
    rows = tool_rounds.rows(step(), cfg)
    required = tool_rounds.gate(cfg, rows, 3, lambda: NOW)
    assert required is not None and required["round"] == 3
    assert [a["id"] for a in required["approvals"]] == ["call_a"]
    assert required["due_at"] == "2026-12-03T12:01:00Z"
    assert rows[0].approval == "pending" and rows[0].queue is None
    assert rows[0].approval_due_at == NOW + timedelta(seconds=60)
    handed = tool_rounds.requires_action(rows, 3, "http://127.0.0.1:8000/v1/callbacks/t")
    assert [c["id"] for c in handed["tool_calls"]] == ["call_b"]  # not gated, not its own
    assert handed["callback_url"] == "http://127.0.0.1:8000/v1/callbacks/t"


def test_no_gated_call_no_approval_and_no_clock() -> None:
    cfg = config(tools=TOOLS, approval="never")
    rows = tool_rounds.rows(step(), cfg)

    def clock() -> datetime:
        raise AssertionError("the clock is read only for a deadline")

    assert tool_rounds.gate(cfg, rows, 1, clock) is None
    handed = tool_rounds.requires_action(rows, 1, "u")
    assert [c["id"] for c in handed["tool_calls"]] == ["call_a", "call_b"]
    assert handed["tool_calls"][0]["queue"] == "payments"
    assert "queue" not in handed["tool_calls"][1]


def test_a_rule_that_cannot_be_evaluated_gates_the_call_and_says_so() -> None:
    broken = [{**TOOLS[0], "approval": {"when": {"type": 12}}}, TOOLS[1]]  # not a schema
    cfg = config(tools=broken)
    rows = tool_rounds.rows(step(), cfg)
    with structlog.testing.capture_logs() as logs:
        required = tool_rounds.gate(cfg, rows, 2, lambda: NOW)
    assert required is not None and [a["id"] for a in required["approvals"]] == ["call_a"]
    assert required["due_at"] is None  # (no approval_timeout)
    (warning,) = [e for e in logs if e["event"] == "approval.rule_failed"]
    assert warning["tool_call_id"] == "call_a" and warning["round"] == 2
