"""A round's answers are input, recorded where they arrive and applied where the run goes on.

A tool result (`app.service.submissions`), a rejection (`app.approvals.service`) or a
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
from app.store.run_records import RunRecord, ToolCallRecord
from app.store.runs import RunStore


class RoundMismatch(ValueError):
    """The rows of the round a run waits on are not the calls its state waits on."""


def answered(run: AgentRun, calls: Sequence[ToolCallRecord]) -> bool:
    """Whether `calls` (the rows of the round the run waits on, in order) answer every
    call it waits on: the run's own results are in its state, the others in their rows.
    Raises `RoundMismatch` for rows that are not that round's calls (none at all is a
    round not handed out yet: open)."""
    pending = run.pending_tool_calls()
    if not pending or not calls:
        return False
    ids = [p.tool_call.id for p in pending]
    if ids != [row.call_id for row in calls]:
        raise RoundMismatch(
            f"the run waits on the calls {ids}, its round's rows are {[c.call_id for c in calls]}"
        )
    return all(  # (a row answered when it was written: a refused agent tool's call)
        p.preresolved_result is not None or row.preresolved or row.result_hash is not None
        for p, row in zip(pending, calls, strict=True)
    )


def apply(run: AgentRun, calls: Sequence[ToolCallRecord]) -> bool:
    """Feed the run the round's recorded answers, in its order, when they answer every
    call it waits on; whether they did (a run whose round is still open, e.g. an expired
    run retried before its executor answered, is left to suspend for it again). Raises
    when they cannot be fed (`RoundMismatch`, a row changed by hand): the run is as it
    was."""
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


async def round_rows(store: RunStore, record: RunRecord, run: AgentRun) -> list[ToolCallRecord]:
    """The rows of the round `run` (loaded from `record`) waits on: those the claim read
    with it, else read now."""
    if record.round_calls is not None and record.turn == run.turn():
        return list(record.round_calls)
    return (await store.pending_calls({record.id: run.turn()}))[record.id]


async def loaded_run(store: RunStore, record: RunRecord) -> AgentRun:
    """The run of `record` (read with its log) as the worker that claims it will see it:
    with its round's recorded answers applied (as stored, when they cannot be). Reads the
    round's rows only for a run whose state waits on one."""
    run = stored.load(record.state, record.log).run
    if run.pending_tool_calls():
        calls = await round_rows(store, record, run)
        try:
            apply(run, calls)
        except Exception:  # (answers the worker fails the run on: shown as stored)
            return stored.load(record.state, record.log).run
    return run
