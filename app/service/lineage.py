"""A run's place in its conversation, as its configuration records it: the run it
continues (`previous_run_id`) and its conversation's first run (`conversation_id`), which
a create writes and the API and the dashboard show."""

from __future__ import annotations

from typing import Any

from app.store.config import spawns
from app.store.run_records import RunRecord

#: Configuration keys of a continuing run.
PREVIOUS_KEY = "previous_run_id"
CONVERSATION_KEY = "conversation_id"
#: The named agent a run started from (`{"name", "version"}`), and a child run's place in
#: its tree (`{"parent_run_id", "root_run_id", "depth", "parent_tool_call_id"}`).
AGENT_KEY = "agent"
TREE_KEY = "tree"
#: The schedule tick that started a run (`{"id", "key", "scheduled_time", "source"}`).
SCHEDULE_KEY = "schedule"
#: The open protocol a run was started over (`{"protocol": "a2a" | "ag-ui", ...}`: the
#: protocol's own names for it: A2A's `message_id`, AG-UI's `thread_id` and `run_id`).
ORIGIN_KEY = "origin"
#: The run and checkpoint a fork was made from (`{"run_id", "checkpoint", "mode", ...}`).
FORK_KEY = "forked_from"


def conversation_of(record: RunRecord) -> str:
    """The id of the first run of `record`'s conversation (its own id if it continues none)."""
    value = record.config.get(CONVERSATION_KEY)
    return value if isinstance(value, str) else record.id


def previous_of(record: RunRecord) -> str | None:
    value = record.config.get(PREVIOUS_KEY)
    return value if isinstance(value, str) else None


def agent_of(record: RunRecord) -> dict[str, Any] | None:
    """`{"name", "version"}` of the agent the run started from, if it did."""
    value = record.config.get(AGENT_KEY)
    return dict(value) if isinstance(value, dict) else None


def schedule_of(record: RunRecord) -> dict[str, Any] | None:
    """`{"key", "scheduled_time"}` of the schedule tick that started the run, if one did."""
    value = record.config.get(SCHEDULE_KEY)
    if not isinstance(value, dict):
        return None
    return {"key": value.get("key"), "scheduled_time": value.get("scheduled_time")}


def origin_of(record: RunRecord) -> dict[str, Any] | None:
    """`{"protocol", ...}` of the open protocol the run was started over, if it was."""
    value = record.config.get(ORIGIN_KEY)
    return dict(value) if isinstance(value, dict) and "protocol" in value else None


def forked_from(record: RunRecord) -> dict[str, Any] | None:
    """`{"run_id", "checkpoint", "mode"}` of the run and checkpoint a fork was made from."""
    value = record.config.get(FORK_KEY)
    if not isinstance(value, dict):
        return None
    return {k: value.get(k) for k in ("run_id", "checkpoint", "mode", "on_divergence")}


def tree_of(record: RunRecord) -> dict[str, Any]:
    """The run's place in its tree: its parent (None for a root), its root (its own id for
    a root), its depth (0 for a root) and the parent's call it answers."""
    tree = record.config.get(TREE_KEY)
    if not isinstance(tree, dict):
        return {
            "parent_run_id": None,
            "root_run_id": record.id,
            "depth": 0,
            "parent_tool_call_id": None,
        }
    return {
        "parent_run_id": tree.get("parent_run_id"),
        "root_run_id": tree.get("root_run_id") or record.id,
        "depth": int(tree.get("depth") or 0),
        "parent_tool_call_id": tree.get("parent_tool_call_id"),
    }


def in_tree(record: RunRecord) -> bool:
    """Whether the run is part of a tree: a child, or a run whose agent tools can start children."""
    return isinstance(record.config.get(TREE_KEY), dict) or spawns(record.config)
