"""What the inline executor waits on in a tree of runs once nothing in it is its own to
answer (`agentrun_client._tree`): the run nearest to a tool call, for as long as nothing
else can change; nothing when only a person can move the tree."""

from __future__ import annotations

from typing import Any

from agentrun_client import _base, _tree
from agentrun_client.models import SUSPENDED_OR_FINISHED, Run

WAITS_ON_CHILDREN: dict[str, Any] = {"status": "requires_action", "required_action": None}
GATED = {
    "status": "requires_action",
    "required_action": {
        "type": "approve_tool_calls",
        "approvals": [{"id": "c1", "name": "pay", "arguments": {}, "arguments_hash": "h"}],
    },
}


def run(id: str, parent: str | None = None, depth: int = 0, **fields: Any) -> Run:
    return Run.model_validate(
        {
            "id": id,
            "status": "running",
            "turn": 1,
            "max_turns": 8,
            "created_at": "2027-01-12T10:00:00Z",
            "updated_at": "2027-01-12T10:00:00Z",
            "parent_run_id": parent,
            "root_run_id": "r",
            "depth": depth,
            **fields,
        }
    )


def test_the_subtree_of_a_run_is_it_and_every_run_below_it() -> None:
    runs = [run("r"), run("a", "r", 1), run("b", "r", 1), run("a1", "a", 2), run("b1", "b", 2)]
    assert [r.id for r in _tree.subtree(runs, "a")] == ["a", "a1"]
    assert [r.id for r in _tree.subtree(runs, "r")] == ["r", "a", "b", "a1", "b1"]


def test_a_chain_waits_on_its_moving_leaf_with_no_bound() -> None:
    runs = [run("r", **WAITS_ON_CHILDREN), run("a", "r", 1, **WAITS_ON_CHILDREN), run("x", "a", 2)]
    assert _tree.watch(runs) == _tree.Watch("x", SUSPENDED_OR_FINISHED, bounded=False)


def test_a_run_whose_children_ended_is_waited_on_until_it_moves_on() -> None:
    runs = [
        run("r", **WAITS_ON_CHILDREN),
        run("a", "r", 1, **WAITS_ON_CHILDREN),
        run("x", "a", 2, status="completed"),
    ]
    assert _tree.watch(runs) == _tree.Watch("a", _base.MOVED_ON, bounded=False)


def test_parallel_branches_are_looked_at_again_after_a_slice() -> None:
    runs = [run("r", **WAITS_ON_CHILDREN), run("a", "r", 1), run("b", "r", 1, status="queued")]
    found = _tree.watch(runs)
    assert found is not None and found.bounded and found.run_id in {"a", "b"}
    slices = [_tree.next_slice(None)]
    for _ in range(6):
        slices.append(_tree.next_slice(slices[-1]))
    assert slices[0] == _tree.FIRST_SLICE and slices[-1] == _tree.MAX_SLICE
    assert slices == sorted(slices)


def test_a_tree_only_a_person_can_move_is_nothing_to_wait_on() -> None:
    runs = [run("r", **WAITS_ON_CHILDREN), run("a", "r", 1, **GATED)]
    assert _tree.waits_for_person(runs[1]) and not _tree.waits_for_person(runs[0])
    assert _tree.watch(runs) is None
    # ... but a branch that moves is waited on, and looked at again after a slice (a
    # person may answer the other meanwhile).
    runs.append(run("b", "r", 1))
    assert _tree.watch(runs) == _tree.Watch("b", SUSPENDED_OR_FINISHED, bounded=True)
