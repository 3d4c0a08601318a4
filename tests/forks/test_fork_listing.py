"""A run's forks (`GET /v1/runs/{id}/forks`, both back ends): forks and replays of a run,
oldest first, a page at a time; a fork's own forks on it, not on the original; another
tenant's run 404; and forks made before revision 0026 found after it."""

from __future__ import annotations

import httpx
import pytest

from alembic import command
from app.core.scope import Scope
from app.forks.service import ForkService
from app.forks.specs import ForkIn
from app.service.runs import RunService
from app.store.backend.engines import create_engine
from app.store.migrate import alembic_config
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.forks.test_fork_api import body, completed, two_tenants
from tests.helpers import drive_once, run_body
from tests.store.test_migrations import TEXT_ONLY, own_database

__all__ = ["own_database"]


async def forks(client: httpx.AsyncClient, run_id: str, **params: object) -> httpx.Response:
    return await client.get(f"/v1/runs/{run_id}/forks", params=params)


async def test_a_runs_forks_and_replays_oldest_first_and_a_forks_own_on_it(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    assert (await forks(client, run["id"])).json() == {"data": [], "next_cursor": None}
    made = []
    for fork in ({"at": 3}, {"mode": "replay"}, {"at": 1, "overrides": {"max_turns": 4}}):
        answer = await client.post(f"/v1/runs/{run['id']}/fork", json=fork)
        assert answer.status_code == 201, answer.text
        made.append(answer.json())
    nested = await client.post(f"/v1/runs/{made[0]['id']}/fork", json={"at": 1})
    assert nested.status_code == 201, nested.text

    listed = await forks(client, run["id"])
    assert listed.status_code == 200, listed.text
    page = listed.json()
    assert [r["id"] for r in page["data"]] == [r["id"] for r in made]
    assert page["next_cursor"] is None
    assert [r["forked_from"]["mode"] for r in page["data"]] == ["fork", "replay", "fork"]
    assert all(r["forked_from"]["run_id"] == run["id"] for r in page["data"])
    assert page["data"][0] == made[0] | {"updated_at": page["data"][0]["updated_at"]}
    on_fork = (await forks(client, made[0]["id"])).json()["data"]
    assert [r["id"] for r in on_fork] == [nested.json()["id"]]
    assert (await forks(client, nested.json()["id"])).json()["data"] == []


async def test_forks_page_by_cursor_and_refuse_bad_input(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    made = []
    for at in (1, 3, 5):
        answer = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": at})
        made.append(answer.json()["id"])
    seen, cursor = [], None
    while True:
        params: dict[str, object] = {"limit": 2} | ({"cursor": cursor} if cursor else {})
        page = (await forks(client, run["id"], **params)).json()
        assert len(page["data"]) <= 2
        seen += [r["id"] for r in page["data"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == made
    for bad in ({"limit": 0}, {"limit": 101}, {"cursor": "not a cursor"}):
        refused = await forks(client, run["id"], **bad)
        assert refused.status_code == 422, (bad, refused.text)
    missing = await forks(client, "run_nope")
    assert missing.status_code == 404 and missing.json()["type"].endswith("/run-not-found")
    plain = await client.post("/v1/runs", json=body())
    assert (await forks(client, plain.json()["id"])).json()["data"] == []


async def test_another_tenants_forks_are_not_listed(database_url: str, store: RunStore) -> None:
    async with two_tenants(database_url, store) as (a, b):
        rid = (await a.post("/v1/runs", json=body())).json()["id"]
        fork = await a.post(f"/v1/runs/{rid}/fork", json={})
        assert fork.status_code == 201, fork.text
        refused = await forks(b, rid)
        assert refused.status_code == 404 and refused.json()["type"].endswith("/run-not-found")
        listed = (await forks(a, rid)).json()["data"]
        assert [r["id"] for r in listed] == [fork.json()["id"]]


@pytest.mark.parametrize("own_database", ["postgres", "sqlite"], indirect=True)
async def test_forks_made_before_0026_are_found_after_it(own_database: str) -> None:
    """Revision 0026 reads the original off each fork's configuration; its downgrade drops
    the column, and the upgrade back finds the forks again."""
    settings = make_settings(own_database)
    store = RunStore(create_engine(own_database))
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body(model=TEXT_ONLY))
    await drive_once(store, settings)
    fork, _ = await ForkService(service).fork(view.record.id, ForkIn(), scope=Scope.ALL)
    await store.aclose()

    command.downgrade(alembic_config(own_database), "0025")
    command.upgrade(alembic_config(own_database), "head")

    store = RunStore(create_engine(own_database))
    try:
        service = RunService(store, settings)
        found, cursor = await ForkService(service).forks(
            view.record.id, limit=10, cursor=None, scope=Scope.ALL
        )
        assert [v.record.id for v in found] == [fork.record.id] and cursor is None
    finally:
        await store.aclose()
