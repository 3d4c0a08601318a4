"""Replays over HTTP (both back ends): a replay without a patch reproduces its original
with no model call and no executor asked; a changed preamble diverges at turn 1 and goes
on live (or fails, as asked); a patched result diverges at the next call."""

from __future__ import annotations

from typing import Any

import httpx

from app.store.runs import RunStore
from tests.forks.test_fork_api import body, completed, drive, finish, messages, run_of


async def events(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    got = await client.get(f"/v1/runs/{run_id}/events", params={"limit": 1000})
    assert got.status_code == 200, got.text
    return list(got.json()["data"])


def of_type(found: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in found if e["type"] == kind]


async def test_a_replay_without_a_patch_reproduces_the_run_with_no_model_call(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    replay = await client.post(f"/v1/runs/{run['id']}/fork", json={"mode": "replay"})
    assert replay.status_code == 201, replay.text
    rid = replay.json()["id"]
    await drive(client, store)  # (no executor is asked: it ends in one go)
    done = await run_of(client, rid)
    assert done["status"] == "completed", done
    assert done["output"] == run["output"]
    assert (await messages(client, rid)) == (await messages(client, run["id"]))
    found = await events(client, rid)
    assert of_type(found, "model.called") == []
    assert [e["data"]["turn"] for e in of_type(found, "model.replayed")] == [1, 2, 3]
    assert len(of_type(found, "tools.replayed")) == 2
    assert of_type(found, "replay.diverged") == []
    usage = done["usage"] or {}  # (nothing billed: no model call was made)
    assert not usage.get("input_tokens") and not usage.get("output_tokens")


async def test_a_changed_preamble_diverges_at_turn_one_and_goes_on_live(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    request = {"mode": "replay", "overrides": {"preamble": "You add numbers carefully."}}
    replay = await client.post(f"/v1/runs/{run['id']}/fork", json=request)
    assert replay.status_code == 201, replay.text
    rid = replay.json()["id"]
    done, answered = await finish(client, store, rid)
    assert done["status"] == "completed" and len(answered) == 2  # (its executor answered)
    found = await events(client, rid)
    diverged = of_type(found, "replay.diverged")
    assert len(diverged) == 1 and diverged[0]["data"]["turn"] == 1
    assert "preamble" in diverged[0]["data"]["reason"]
    assert len(of_type(found, "model.called")) == 3 and of_type(found, "model.replayed") == []


async def test_a_replay_asked_to_fail_fails_at_its_first_difference(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    request = {
        "mode": "replay",
        "on_divergence": "fail",
        "overrides": {"preamble": "Something else."},
    }
    replay = await client.post(f"/v1/runs/{run['id']}/fork", json=request)
    rid = replay.json()["id"]
    await drive(client, store)
    failed = await run_of(client, rid)
    assert failed["status"] == "failed"
    assert failed["error"]["type"] == "replay_diverged" and "turn 1" in failed["error"]["message"]
    assert of_type(await events(client, rid), "model.called") == []


async def test_a_patched_result_replays_up_to_the_patch_then_goes_live(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    call = original[1]["content"][0]["id"]
    request = {
        "mode": "replay",
        "at": 3,
        "patch": {"tool_results": [{"tool_call_id": call, "output": "4"}]},
    }
    replay = await client.post(f"/v1/runs/{run['id']}/fork", json=request)
    assert replay.status_code == 201, replay.text
    rid = replay.json()["id"]
    done, _ = await finish(client, store, rid)
    assert done["status"] == "completed"
    found = await events(client, rid)
    diverged = of_type(found, "replay.diverged")
    assert [d["data"]["turn"] for d in diverged] == [2]
    assert "message 2" in diverged[0]["data"]["reason"]


async def test_a_replay_of_a_replay_is_a_replay_of_the_same_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    first = await client.post(f"/v1/runs/{run['id']}/fork", json={"mode": "replay"})
    await drive(client, store)
    second = await client.post(f"/v1/runs/{first.json()['id']}/fork", json={"mode": "replay"})
    assert second.status_code == 201, second.text
    await drive(client, store)
    done = await run_of(client, second.json()["id"])
    assert done["status"] == "completed" and done["output"] == run["output"]
    assert of_type(await events(client, done["id"]), "model.called") == []


async def test_a_fork_is_not_a_replay(client: httpx.AsyncClient, store: RunStore) -> None:
    made = await client.post("/v1/runs", json=body())
    run, _ = await finish(client, store, made.json()["id"])
    forked = await client.post(f"/v1/runs/{run['id']}/fork", json={"at": 3})
    done, _ = await finish(client, store, forked.json()["id"])
    found = await events(client, done["id"])
    assert len(of_type(found, "model.called")) == 2 and of_type(found, "model.replayed") == []
