"""A suspension for tool calls, as data: the round's rows and the `requires_action`
document an executor is handed (the calls the store's round gates hold, as approvals',
are left out). Pure."""

from __future__ import annotations

from typing import Any

from app.core import CallTools
from app.core.serde import tool_result_to_dict
from app.store.config import RunConfig
from app.store.run_records import NewToolCall


def rows(step: CallTools, config: RunConfig) -> list[NewToolCall]:
    """The round's pending calls, in the run's order: the run's own (preresolved) with
    their result, the others on the queue their tool names (if any)."""
    return [
        NewToolCall(
            position=i,
            call_id=p.tool_call.id,
            name=p.tool_call.name,
            arguments=p.tool_call.arguments,
            preresolved_result=None
            if p.preresolved_result is None
            else tool_result_to_dict(p.preresolved_result),
            queue=config.queue_of(p.tool_call.name) if p.preresolved_result is None else None,
        )
        for i, p in enumerate(step.calls)
    ]


def requires_action(rows: list[NewToolCall], round: int, callback_url: str) -> dict[str, Any]:
    """What the executor is handed: the calls it owes a result (not the run's own, not
    those awaiting a decision) and where to send the results."""
    return {
        "round": round,
        "tool_calls": [
            {"id": r.call_id, "name": r.name, "arguments": r.arguments}
            | ({"queue": r.queue} if r.queue is not None else {})
            for r in rows
            if r.preresolved_result is None and r.approval is None
        ],
        "callback_url": callback_url,
    }
