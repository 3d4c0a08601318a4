"""A round's answers are input, recorded where they arrive and applied where the run goes on.

A tool result (`app.service.submissions`), a rejection (`app.service.approvals`) or a
queue executor's result is written to its call's row; the change that answers the last
open call queues the run, and nothing on the way in decodes the run's state. The state
still waits for the round (`ExecutingTools`) until the worker that claims the run feeds
it the recorded answers (`apply`), as Temporal applies a signal where the workflow runs.

Whoever shows a run's conversation before that claim (its messages, the dashboard, a
continuation of a run cancelled in between) applies them the same way (`loaded_run`), so
what a client sees does not depend on whether a worker got to the run yet.
"""

from __future__ import annotations

from collections.abc import Sequence

from app.core import AgentRun, stored
from app.core.serde import tool_result_from
from app.service import convert
from app.store.records import RunRecord, ToolCallRecord
from app.store.runs import RunStore


def answered(run: AgentRun, calls: Sequence[ToolCallRecord]) -> bool:
    """Whether `calls` (the rows of the round the run waits on, in order) answer every
    call it waits on: the run's own results are in its state, the others in their rows."""
    pending = run.pending_tool_calls()
    if not pending or len(pending) != len(calls):
        return False
    return all(
        p.tool_call.id == row.call_id
        and (p.preresolved_result is not None or row.result_hash is not None)
        for p, row in zip(pending, calls, strict=True)
    )


def apply(run: AgentRun, calls: Sequence[ToolCallRecord]) -> bool:
    """Feed the run the round's recorded answers, in its order, when they answer every
    call it waits on; whether they did (a run whose round is still open, e.g. an expired
    run retried before its executor answered, is left to suspend for it again)."""
    if not answered(run, calls):
        return False
    results = []
    for p, row in zip(run.pending_tool_calls(), calls, strict=True):
        if p.preresolved_result is not None:
            results.append(p.preresolved_result)
        elif row.preresolved:
            results.append(tool_result_from(row.result))
        else:
            results.append(convert.submitted_result(p, row.result, row.executed_arguments))
    run.tool_results(results)
    return True


async def loaded_run(store: RunStore, record: RunRecord) -> AgentRun:
    """The run of `record` (read with its log) as the worker that claims it will see it:
    with its round's recorded answers applied. Reads the round's rows only for a run
    whose state waits on one."""
    run = stored.load(record.state, record.log).run
    if run.pending_tool_calls():
        rounds = await store.pending_calls({record.id: run.turn()})
        apply(run, rounds[record.id])
    return run
