"""What the inline executor (`execute`, `run`) reads from a tree of runs, with no IO: the
runs below the one it serves, which of them wait for a person, and which one to wait on
next. Agent tools' calls start child runs; a run whose calls all became children waits
on them with no `required_action`, and a descendant's client tools are answered by
whoever answers the root (docs/client.md, *Agents and child runs*)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentrun_client import _base
from agentrun_client.models import (
    SUSPENDED_OR_FINISHED,
    ApproveToolCalls,
    Run,
    RunStatus,
    SubmitToolResults,
)

#: How long a wait on one run of a tree lasts at first when other runs of it may change
#: meanwhile (parallel children, one waiting for a person); doubled while nothing
#: changes, up to `MAX_SLICE`.
FIRST_SLICE = 1.0
MAX_SLICE = 8.0


def subtree(runs: Sequence[Run], top: str) -> list[Run]:
    """The runs at or below `top` (by their `parent_run_id`), `top` first."""
    by_parent: dict[str, list[Run]] = {}
    for run in runs:
        if run.parent_run_id is not None:
            by_parent.setdefault(run.parent_run_id, []).append(run)
    out = [r for r in runs if r.id == top]
    i = 0
    while i < len(out):
        out.extend(by_parent.get(out[i].id, ()))
        i += 1
    return out


def waits_for_person(run: Run) -> bool:
    """Suspended for what only a person answers (a resolution, a budget, an action this
    client does not know, gated calls nobody decided): nothing moves it until they do."""
    action = run.required_action
    if run.status != RunStatus.REQUIRES_ACTION or action is None:
        return False
    return not isinstance(action, SubmitToolResults | ApproveToolCalls) or bool(
        run.pending_approvals
    )


@dataclass(frozen=True)
class Watch:
    """The run to wait on next, until one of `statuses`; `bounded`: other runs of the tree
    may change meanwhile, so look again after a slice of time."""

    run_id: str
    statuses: frozenset[RunStatus]
    bounded: bool


def watch(runs: Sequence[Run]) -> Watch | None:
    """What to wait on once nothing in `runs` (a tree, as read, with nothing left for this
    client to answer) is this client's to answer; None when only a person can move it.

    A run that moves (queued, running) is waited on until it suspends or ends; one that
    waits on others without an open child (a queue's executors; a child that has just
    ended, whose answer is on its way) until it moves on. A run with an open child moves
    only once its children end, which a wait on them sees. The deepest first: it is the
    nearest to a tool call."""
    open_runs = [r for r in runs if not r.is_terminal]
    with_open_child = {r.parent_run_id for r in open_runs if r.parent_run_id is not None}
    candidates: list[tuple[Run, frozenset[RunStatus]]] = []
    person = False
    for run in open_runs:
        if run.status != RunStatus.REQUIRES_ACTION:
            candidates.append((run, SUSPENDED_OR_FINISHED))
        elif waits_for_person(run):
            person = True
        elif run.id not in with_open_child:
            candidates.append((run, _base.MOVED_ON))
    if not candidates:
        return None
    run, statuses = max(candidates, key=lambda c: c[0].depth)
    return Watch(run.id, statuses, bounded=person or len(candidates) > 1)


def next_slice(current: float | None) -> float:
    return FIRST_SLICE if current is None else min(MAX_SLICE, current * 2)
