"""What a fork takes from its run (both back ends): every configuration field a create
sets (a webhook, approvals, a queue, an invalid-call policy, an output schema, limits,
metadata, priority), and none of its lineage (its conversation, its tree)."""

from __future__ import annotations

from typing import Any

from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.forks.test_fork_api import body

CARRIED = (
    "model",
    "preamble",
    "tools",
    "tool_choice",
    "invalid_tool_call",
    "webhook",
    "tool_queue",
    "approval",
    "approval_timeout",
    "approval_on_timeout",
    "output_schema",
    "expires_in",
    "stream",
)


async def test_a_fork_carries_its_runs_configuration(store: RunStore, database_url: str) -> None:
    from app.forks import fork_service
    from app.forks.specs import ForkIn

    settings: Settings = make_settings(database_url, webhook_allow_private=True)
    runs = RunService(store, settings)
    fields: dict[str, Any] = body(
        webhook={"url": "http://127.0.0.1:9/hook"},
        approval="always",
        approval_timeout=60,
        approval_on_timeout="approve",
        tool_queue="gpu",
        invalid_tool_call={"action": "retry", "max_retries": 2},
        output_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
        limits={"max_model_calls": 7},
        metadata={"team": "evals"},
        priority=5,
        expires_in=600,
        stream=True,
    )
    view, _ = await runs.create_run(RunCreate.model_validate(fields))
    original = view.record
    forked, created = await fork_service(runs).fork(original.id, ForkIn(), scope=Scope.ALL)
    fork = await store.get(forked.record.id, scope=Scope.ALL)
    assert created and fork is not None
    for key in CARRIED:
        assert fork.config.get(key) == original.config.get(key), key
    assert (fork.limits, fork.metadata, fork.priority) == (
        original.limits,
        original.metadata,
        original.priority,
    )
    assert fork.config["forked_from"]["run_id"] == original.id
    assert fork.config.get("conversation_id") is None and fork.config.get("tree") is None
