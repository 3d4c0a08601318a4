"""A run's `compaction` policy at create (`app.compaction.policy`): stored without its
unset options, absent (and hashed as before) when unset, refused with a 422 when bad
(an option set to null among them: left out, it takes its default), integers taken as
every integer field takes them, and taken from an agent or the run a run continues."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.core.scope import Scope
from app.store.runs import RunStore
from tests.agents.test_tree_api import ECHO, make_agent
from tests.helpers import drive_due, snapshot

POLICY = {"threshold_tokens": 5000}


async def config_of(store: RunStore, run_id: str) -> dict[str, Any]:
    record = await store.get(run_id, scope=Scope.ALL)
    assert record is not None
    return dict(record.config)


async def create(client: httpx.AsyncClient, **body: Any) -> httpx.Response:
    return await client.post("/v1/runs", json={"prompt": "hi", "model": ECHO, **body})


async def test_the_policy_is_stored_without_its_unset_options(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    plain = await create(client)
    assert plain.status_code == 201, plain.text
    assert "compaction" not in await config_of(store, plain.json()["id"])
    made = await create(client, compaction=POLICY)
    assert made.status_code == 201, made.text
    stored = (await config_of(store, made.json()["id"]))["compaction"]
    assert stored == {"threshold_tokens": 5000, "keep_recent_turns": 2}
    full = {
        "threshold_tokens": 2000.0,
        "model": ECHO,
        "keep_recent_turns": 3.0,
        "instructions": "x",
    }
    made = await create(client, compaction=full)
    assert made.status_code == 201, made.text
    stored = (await config_of(store, made.json()["id"]))["compaction"]
    assert stored == {**full, "threshold_tokens": 2000, "keep_recent_turns": 3}
    assert type(stored["threshold_tokens"]) is int and type(stored["keep_recent_turns"]) is int


async def test_an_unset_policy_is_hashed_as_before(client: httpx.AsyncClient) -> None:
    """An idempotent create sent again with `compaction: null` is the same request."""
    headers = {"Idempotency-Key": "compaction-hash"}
    first = await client.post("/v1/runs", json={"prompt": "hi", "model": ECHO}, headers=headers)
    again = await client.post(
        "/v1/runs", json={"prompt": "hi", "model": ECHO, "compaction": None}, headers=headers
    )
    assert first.status_code == 201 and again.status_code == 200, again.text
    assert again.json()["id"] == first.json()["id"]


@pytest.mark.parametrize(
    ("policy", "where"),
    [
        ({"threshold_tokens": 999}, "threshold_tokens"),
        ({"threshold_tokens": "5000"}, "threshold_tokens"),
        ({}, "threshold_tokens"),
        ({"threshold_tokens": 5000, "keep_recent_turns": 0}, "keep_recent_turns"),
        ({"threshold_tokens": 5000, "model": None}, "model"),
        ({"threshold_tokens": 5000, "keep_recent_turns": None}, "keep_recent_turns"),
        ({"threshold_tokens": 5000, "instructions": None}, "instructions"),
        ({"threshold_tokens": None}, "threshold_tokens"),
        ({"threshold_tokens": 5000, "keep_recent_turns": 2.5}, "keep_recent_turns"),
        ({"threshold_tokens": 5000.5}, "threshold_tokens"),
        ({"threshold_tokens": 5000, "keep_recent_turns": True}, "keep_recent_turns"),
        ({"threshold_tokens": 5000, "model": {"provider": "nope", "name": "x"}}, "provider"),
        ({"threshold_tokens": 5000, "instructions": ""}, "instructions"),
        ({"threshold_tokens": 5000, "other": 1}, "other"),
        ("5000", "compaction"),
    ],
)
async def test_a_bad_policy_is_a_422_that_changes_nothing(
    client: httpx.AsyncClient, store: RunStore, policy: Any, where: str
) -> None:
    before = await client.get("/v1/runs")
    response = await create(client, compaction=policy)
    assert response.status_code == 422, response.text
    assert where in response.text
    assert (await client.get("/v1/runs")).json() == before.json()


async def test_an_agent_and_a_continuation_take_the_policy(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    await make_agent(client, name="long", model=ECHO, compaction=POLICY)
    from_agent = await client.post("/v1/runs", json={"agent": "long", "prompt": "hi"})
    assert from_agent.status_code == 201, from_agent.text
    first_id = from_agent.json()["id"]
    assert (await config_of(store, first_id))["compaction"]["threshold_tokens"] == 5000
    refused = await client.post(
        "/v1/runs", json={"agent": "long", "prompt": "hi", "compaction": POLICY}
    )
    assert refused.status_code == 422 and "compaction" in refused.text
    await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]
    state = await snapshot(store, first_id)
    assert state[0].status == "completed"
    later = await client.post("/v1/runs", json={"prompt": "more", "previous_run_id": first_id})
    assert later.status_code == 201, later.text
    assert (await config_of(store, later.json()["id"]))["compaction"] == {
        "threshold_tokens": 5000,
        "keep_recent_turns": 2,
    }
    await drive_due(store, client.app.state.settings)  # type: ignore[attr-defined]
    off = await client.post(
        "/v1/runs",
        json={"prompt": "more", "previous_run_id": later.json()["id"], "compaction": None},
    )
    assert off.status_code == 201, off.text
    assert "compaction" not in await config_of(store, off.json()["id"])
