"""A tool round as data (app.worker.tool_rounds): the rows a suspension writes (the calls
approvals gate and what the executor is handed: tests/approvals/test_rounds.py)."""

from __future__ import annotations

from typing import Any

from app.core import CallTools, Text, ToolCall, ToolResult
from app.core.types import PendingToolCall
from app.store.config import RunConfig
from app.worker import tool_rounds


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
