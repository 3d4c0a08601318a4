"""A child run's end answers its parent's call (`hooks.run_ended`), through the same path
as any tool result (`ToolResults.submit`, by the child's id: a second answer of the same
outcome changes nothing); a sweep answers what a crash between a child's end and its hook
left open. The parent resumes once, when the last open call of its round is answered."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
import structlog

from app.core.lifecycle import TERMINAL, RunStatus
from app.core.scope import Scope
from app.service import lineage
from app.service.errors import ServiceError
from app.service.runs import RunService
from app.service.schemas import ToolResultIn, ToolResultsIn
from app.store.run_records import RunRecord
from app.store.schema import runs, select_runs, tool_calls

log = structlog.get_logger("agentrun.agents")

#: Ended children answered per sweep.
SWEEP_BATCH = 100


def outcome(record: RunRecord) -> tuple[str, bool]:
    """What the parent's model is told of its child's end: the output, or an error naming
    how it ended."""
    if record.status is RunStatus.COMPLETED:
        return record.output or "", False
    agent = lineage.agent_of(record) or {}
    who = f"the child run {record.id}"
    if agent:
        who += f" (agent {agent.get('name')}@{agent.get('version')})"
    error = record.error or {}
    detail = f": {error.get('type')}: {error.get('message')}" if error else ""
    return f"{who} ended {record.status.value}{detail}", True


class Answers:
    def __init__(self, runs: RunService) -> None:
        self.runs = runs

    async def ended(self, record: RunRecord, now: datetime) -> None:
        """(`run_ended`) A child's end answers its parent's call."""
        tree = lineage.tree_of(record)
        if tree["parent_run_id"] is None:
            return
        await self.answer(record, tree["parent_run_id"], tree["parent_tool_call_id"])

    async def answer(self, record: RunRecord, parent: str, call_id: str) -> bool:
        """Submit the child's outcome to its parent's call; False when the parent no longer
        waits for it (cancelled, ended, answered otherwise)."""
        output, is_error = outcome(record)
        body = ToolResultsIn(
            results=[ToolResultIn(tool_call_id=call_id, output=output, is_error=is_error)]
        )
        try:
            await self.runs.results.submit(
                body, run_id=parent, actor=f"run:{record.id}", scope=Scope.ALL, child=record.id
            )
        except ServiceError as exc:
            log.info("child.answer_refused", run_id=record.id, parent=parent, detail=exc.detail)
            return False
        return True

    async def sweep(self, now: datetime) -> Sequence[str]:
        """The ended children whose waiting parent's call is still open: answered now."""
        child = runs.alias("child")
        parent = runs.alias("parent")
        ended = [s.value for s in TERMINAL]
        stmt = (
            sa.select(tool_calls.c.child_run_id)
            .join(child, child.c.id == tool_calls.c.child_run_id)
            .join(parent, parent.c.id == tool_calls.c.run_id)
            .where(
                tool_calls.c.child_run_id.is_not(None),
                tool_calls.c.result_hash.is_(None),
                child.c.status.in_(ended),
                parent.c.status == RunStatus.REQUIRES_ACTION.value,
                tool_calls.c.round == parent.c.turn,
            )
            .limit(SWEEP_BATCH)
        )
        backend = self.runs.store.backend
        async with backend.reader() as conn:
            ids = list((await conn.execute(stmt)).scalars().all())
            if not ids:
                return []
            rows = (await conn.execute(select_runs().where(runs.c.id.in_(ids)))).mappings().all()
        answered = []
        for row in rows:
            record = RunRecord.from_row(row)
            tree: dict[str, Any] = lineage.tree_of(record)
            if tree["parent_run_id"] and await self.answer(
                record, tree["parent_run_id"], tree["parent_tool_call_id"]
            ):
                answered.append(tree["parent_run_id"])
        return answered
