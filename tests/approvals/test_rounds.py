"""The approvals' round gate (app.approvals.rounds): the calls the run's approval policies
gate in a tool round, and what the executor is then handed (app.worker.tool_rounds)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import structlog.testing

from app.approvals import rounds
from app.worker import tool_rounds
from tests.worker.test_tool_rounds import TOOLS, config, step

NOW = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)


def test_a_gated_call_leaves_its_queue_waits_until_its_deadline_and_is_not_handed_out() -> None:
    gated_tools = [{**TOOLS[0], "approval": {"when": {"required": ["amount"]}}}, TOOLS[1]]
    cfg = config(tools=gated_tools, approval_timeout=60)
    rows = tool_rounds.rows(step(), cfg)
    required = rounds.gate(cfg, rows, 3, lambda: NOW)
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

    assert rounds.gate(cfg, rows, 1, clock) is None
    handed = tool_rounds.requires_action(rows, 1, "u")
    assert [c["id"] for c in handed["tool_calls"]] == ["call_a", "call_b"]
    assert handed["tool_calls"][0]["queue"] == "payments"
    assert "queue" not in handed["tool_calls"][1]


def test_a_rule_that_cannot_be_evaluated_gates_the_call_and_says_so() -> None:
    broken = [{**TOOLS[0], "approval": {"when": {"type": 12}}}, TOOLS[1]]  # not a schema
    cfg = config(tools=broken)
    rows = tool_rounds.rows(step(), cfg)
    with structlog.testing.capture_logs() as logs:
        required = rounds.gate(cfg, rows, 2, lambda: NOW)
    assert required is not None and [a["id"] for a in required["approvals"]] == ["call_a"]
    assert required["due_at"] is None  # (no approval_timeout)
    (warning,) = [e for e in logs if e["event"] == "approval.rule_failed"]
    assert warning["tool_call_id"] == "call_a" and warning["round"] == 2
