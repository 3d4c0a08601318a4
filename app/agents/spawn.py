"""An agent tool's calls become child runs (`hooks.round_spawns`): built here as a create
would build them (`RunService.prepare`), written by the suspension that records the calls,
in its own transaction. A call that may not start one (too deep, too many children in the
run or the tree, an agent deleted since) is refused with an error result the model reads."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import orjson
import structlog
from pydantic import ValidationError

from app.agents.service import AgentService
from app.agents.specs import run_body
from app.service import lineage
from app.service.errors import ServiceError
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.config import ToolDef
from app.store.hooks import Spawned
from app.store.run_records import NewToolCall, RunRecord, SpawnedRun

log = structlog.get_logger("agentrun.agents")


def prompt_of(arguments: Any) -> str:
    """The child's prompt: the `input` string of the default parameters, else the call's
    arguments as JSON."""
    if isinstance(arguments, dict) and set(arguments) == {"input"}:
        value = arguments["input"]
        if isinstance(value, str):
            return value
    return orjson.dumps(arguments).decode()


class Spawner:
    """The round spawner of one deployment."""

    def __init__(self, runs: RunService, agents: AgentService, settings: Settings) -> None:
        self.runs = runs
        self.agents = agents
        self.settings = settings

    async def __call__(
        self, record: RunRecord, rows: list[NewToolCall], round: int, now: datetime
    ) -> Spawned:
        config = record.run_config
        calls = [
            (i, row, tool)
            for i, row in enumerate(rows)
            if row.preresolved_result is None
            and (tool := config.tool(row.name)) is not None
            and tool.agent
        ]
        if not calls:
            return Spawned()
        place = lineage.tree_of(record)
        depth, root = place["depth"] + 1, place["root_run_id"]
        had, in_tree = await self.runs.store.trees.count(record.id, root)
        children: list[SpawnedRun] = []
        refused: dict[int, str] = {}
        for i, row, tool in calls:
            why = self._refusal(depth, had + len(children), in_tree + len(children))
            if why is None:
                try:
                    child = await self._child(record, row, tool, depth, root)
                except (ServiceError, ValidationError) as exc:
                    detail = exc.detail if isinstance(exc, ServiceError) else _first(exc)
                    why = (
                        f"the agent tool {row.name!r} could not start agent "
                        f"{tool.agent!r}: {detail}"
                    )
                else:
                    rows[i] = dataclasses.replace(row, child_run_id=child.values["id"], queue=None)
                    children.append(child)
                    continue
            refused[i] = why
            log.info("agent_tool.refused", run_id=record.id, tool=row.name, reason=why)
        return Spawned(tuple(children), refused)

    def _refusal(self, depth: int, children: int, in_tree: int) -> str | None:
        s = self.settings
        if depth > s.max_agent_depth:
            return (
                f"refused: a child run here would be at depth {depth}, deeper than "
                f"AGENTRUN_MAX_AGENT_DEPTH ({s.max_agent_depth}); answer without this agent"
            )
        if children >= s.max_children_per_run:
            return (
                f"refused: this run started {children} child runs already, "
                f"AGENTRUN_MAX_CHILDREN_PER_RUN ({s.max_children_per_run})"
            )
        if in_tree >= s.max_runs_per_tree:
            return (
                f"refused: this run's tree has {in_tree} child runs already, "
                f"AGENTRUN_MAX_RUNS_PER_TREE ({s.max_runs_per_tree})"
            )
        return None

    async def _child(
        self, parent: RunRecord, row: NewToolCall, tool: ToolDef, depth: int, root: str
    ) -> SpawnedRun:
        """The child run of one call: the agent's version as a create makes it, with the
        parent's executor (its webhook and tool queue, where it has them) and priority."""
        assert tool.agent is not None
        agent = await self.agents.resolve(tool.agent, parent.tenant_id)
        label = f"{agent.name}@{agent.version}"
        body = run_body(
            RunCreate.model_validate({"prompt": prompt_of(row.arguments), "agent": tool.agent}),
            agent.spec,
            label,
        )
        inherited: dict[str, Any] = {"priority": parent.priority}
        for key in ("webhook", "tool_queue"):  # (one executor for the tree)
            if parent.config.get(key):
                inherited[key] = parent.config[key]
        body = RunCreate.model_validate(
            {**body.model_dump(mode="json", exclude_unset=True), **inherited}
        )
        tree = {
            "parent_run_id": parent.id,
            "root_run_id": root,
            "depth": depth,
            "parent_tool_call_id": row.call_id,
        }
        prepared = await self.runs.prepare(
            body,
            actor=f"run:{parent.id}",
            tenant=parent.tenant_id,
            tree=tree,
            named={"name": agent.name, "version": agent.version},
        )
        return prepared.run


def _first(exc: ValidationError) -> str:
    error = exc.errors()[0]
    return ".".join(str(p) for p in error["loc"]) + ": " + error["msg"]
