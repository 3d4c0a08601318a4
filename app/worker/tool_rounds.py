"""A suspension for tool calls, as data: the round's rows and the `requires_action`
document an executor is handed (the calls the store's round gates hold, as approvals',
are left out). Pure."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from app.core import CallTools, ToolResult
from app.core.serde import tool_result_from, tool_result_to_dict
from app.service import convert
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
    those awaiting a decision, not an agent tool's, which its child run answers) and where
    to send the results."""
    return {
        "round": round,
        "tool_calls": [
            {"id": r.call_id, "name": r.name, "arguments": r.arguments}
            | ({"queue": r.queue} if r.queue is not None else {})
            for r in rows
            if r.for_executor
        ],
        "callback_url": callback_url,
    }


def refuse(step: CallTools, rows: list[NewToolCall], refused: Mapping[int, str]) -> None:
    """Answer the refused calls of a round (by position) with an error result naming why,
    as the run's own answers (in place): the model reads it and goes on."""
    for position, message in refused.items():
        result = convert.submitted_result(
            step.calls[position], {"output": message, "is_error": True}
        )
        rows[position] = dataclasses.replace(
            rows[position], preresolved_result=tool_result_to_dict(result), queue=None
        )


def answered_here(rows: list[NewToolCall]) -> list[ToolResult] | None:
    """The round's results when every call is answered already (refused or the run's
    own): the run goes on without suspending. None when any call waits."""
    if any(r.preresolved_result is None for r in rows):
        return None
    return [tool_result_from(r.preresolved_result) for r in rows]


def children_started(rows: list[NewToolCall], round: int) -> dict[str, Any] | None:
    """The data of the round's `run.children_started` event (None: no agent tool's call)."""
    children = [
        {"tool_call_id": r.call_id, "name": r.name, "run_id": r.child_run_id}
        for r in rows
        if r.child_run_id
    ]
    return {"round": round, "children": children} if children else None
