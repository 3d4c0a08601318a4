"""A run's tree as its page shows it: the runs of its root (`RunService.list_runs` with
`root_run_id`, as `GET /v1/runs?root_run_id=`), nested under their parents, each
parent's children oldest first (the order their calls started them)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.scope import Scope
from app.dashboard import present
from app.service import lineage
from app.service.runs import RunService
from app.service.types import RunRecord

#: The most runs of one tree the page lists (AGENTRUN_MAX_RUNS_PER_TREE is 100 unless
#: raised); past it the page says how to list the rest.
SHOWN = 500
PAGE = 100


@dataclass(slots=True)
class Node:
    record: RunRecord
    parent_run_id: str | None
    depth: int
    agent: str | None  # `name@version` of the agent it started from
    children: list[Node] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Tree:
    roots: list[Node]  # the root; and any run whose parent is past the shown ones
    size: int
    complete: bool  # every run of the tree is shown


def started(record: RunRecord) -> tuple[Any, ...]:
    """The order a parent's children started in: by creation, then by the call each
    answers (`call_2_10` after `call_2_9`: one round's calls start in one transaction)."""
    call = lineage.tree_of(record)["parent_tool_call_id"] or ""
    natural = [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", call)]
    return (record.created_at, natural, record.id)


def nest(records: Sequence[RunRecord]) -> list[Node]:
    """The runs as a forest: each under its parent when its parent is among them."""
    nodes: dict[str, Node] = {}
    for r in sorted(records, key=started):
        tree = lineage.tree_of(r)
        nodes[r.id] = Node(r, tree["parent_run_id"], tree["depth"], present.agent_label(r))
    roots: list[Node] = []
    for node in nodes.values():
        parent = nodes.get(node.parent_run_id or "")
        (parent.children if parent is not None else roots).append(node)
    return roots


async def tree_of(service: RunService, record: RunRecord, scope: Scope) -> Tree:
    """The tree `record` is part of, as far as `scope` sees it."""
    root = lineage.tree_of(record)["root_run_id"]
    records: list[RunRecord] = []
    cursor = None
    while True:
        views, cursor = await service.list_runs(
            status=None, limit=PAGE, cursor=cursor, scope=scope, root_run_id=root
        )
        records.extend(v.record for v in views)
        if cursor is None or len(records) >= SHOWN:
            break
    return Tree(nest(records), len(records), cursor is None)
