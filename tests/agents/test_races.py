"""A cancel racing the suspension that starts child runs (on both databases; the lock
order on PostgreSQL): whichever commits first, no child outlives its cancelled parent."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from app.agents import agent_service
from app.agents.specs import AgentIn
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.backend.base import Changed, NewRun
from app.store.runs import RunStore
from tests.helpers import drive_once, wait_for

ECHO = {"provider": "scripted", "name": "echo"}


async def tree_root(service: RunService) -> str:
    agents = agent_service(service)
    await agents.create(
        AgentIn(name="helper", description="d", model=ECHO),
        tenant="default",
        actor=None,  # type: ignore[arg-type]
    )
    body = RunCreate.model_validate(
        {
            "prompt": "go",
            "model": {
                **ECHO,
                "script": [
                    {
                        "tool_calls": [
                            {"name": "ask", "arguments": {"input": "a"}},
                            {"name": "ask", "arguments": {"input": "b"}},
                        ]
                    }
                ],
            },
            "tools": [{"name": "ask", "agent": "helper"}],
        }
    )
    view, _ = await service.create_run(body)
    return view.record.id


async def statuses(store: RunStore, root: str) -> dict[str, RunStatus]:
    runs = await store.trees.in_tree(root, limit=100, before=None, scope=Scope.ALL)
    return {r.id: r.status for r in runs}


async def test_a_cancel_before_the_suspension_commits_leaves_no_child(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    root = await tree_root(service)
    spawner = store.hooks.round_spawns
    assert spawner is not None

    async def cancelled_meanwhile(*args: Any) -> Any:
        spawned = await spawner(*args)  # (the children are built, not written)
        await service.cancel(root, scope=Scope.ALL)
        return spawned

    store.hooks.round_spawns = cancelled_meanwhile
    assert await drive_once(store, settings) is None  # (its write was refused)
    assert await statuses(store, root) == {root: RunStatus.CANCELLED}


async def test_a_cancel_waiting_on_the_suspension_takes_its_children(
    store: RunStore, settings: Settings, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("SQLite serializes writers: no lock to wait on")
    service = RunService(store, settings)
    root = await tree_root(service)
    inside, go_on = asyncio.Event(), asyncio.Event()
    create = store.backend.create

    async def held(run: NewRun) -> Changed:
        if run.conn is not None:  # (a child, inside the suspension's transaction)
            inside.set()
            await go_on.wait()
        return await create(run)

    monkeypatch.setattr(store.backend, "create", held)
    drive = asyncio.ensure_future(drive_once(store, settings))
    await asyncio.wait_for(inside.wait(), 20)
    cancel = asyncio.ensure_future(service.cancel(root, scope=Scope.ALL))

    def waiting_on_a_lock() -> Any:
        async def look() -> int:
            async with await psycopg.AsyncConnection.connect(database_url) as conn:
                cur = await conn.execute(
                    "SELECT count(*) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
                row = await cur.fetchone()
                return int(row[0]) if row else 0

        return look()

    await wait_for(waiting_on_a_lock, lambda n: n >= 1)  # (the cancel waits for the row)
    assert not cancel.done()
    go_on.set()
    assert await asyncio.wait_for(drive, 20) is RunStatus.REQUIRES_ACTION
    await asyncio.wait_for(cancel, 20)
    found = await statuses(store, root)
    assert len(found) == 3, found  # (the root and both children)
    assert set(found.values()) == {RunStatus.CANCELLED}
