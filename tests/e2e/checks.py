"""Whole-run checks shared by the end-to-end tests."""

from __future__ import annotations

from collections import Counter

from app.core import AgentRun, AssistantMessage, stored
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.store.runs import RunStore


def model_turns(run: AgentRun) -> int:
    return sum(isinstance(m, AssistantMessage) for m in run.messages())


async def assert_all_completed_once(store: RunStore, run_ids: list[str], turns: int) -> None:
    """Every run completed exactly once; no model turn twice; no pending call lost."""
    for run_id in run_ids:
        record = await store.get(run_id, with_log=True, scope=Scope.ALL)
        assert record is not None and record.status == RunStatus.COMPLETED, record
        events = Counter(e.type for e in await store.events(run_id))
        assert events["run.completed"] == 1, (run_id, events)
        run = stored.load(record.state, record.log).run
        assert run.is_done()
        assert model_turns(run) == turns, (run_id, run.messages())
        assert len(run.completion_calls()) == turns
        calls = await store.tool_calls(run_id)
        assert calls and all(c.result is not None for c in calls), calls
