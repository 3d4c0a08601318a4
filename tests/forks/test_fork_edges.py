"""Forks and replays at their edges (both back ends), each found by an outside review:
a `fail` replay whose round went live fails at its next call; a fork of a fork counts
the turns before its own start; a fork at the model's calls re-takes the recorded answer
(its calls checked as the run checks any, its checkpoints the original's); a replay never
answers with a message no model call made; a replay's rounds are written as they go."""

from __future__ import annotations

from typing import Any

import httpx

from app.store.runs import RunStore
from tests.forks.test_fork_api import (
    answer,
    body,
    completed,
    drive,
    finish,
    messages,
    pending,
    run_of,
)
from tests.forks.test_replay_api import events, of_type


async def created(client: httpx.AsyncClient, **fields: Any) -> str:
    made = await client.post("/v1/runs", json=body(**fields))
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


async def forked(client: httpx.AsyncClient, run_id: str, **request: Any) -> str:
    made = await client.post(f"/v1/runs/{run_id}/fork", json=request)
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def marks(found: dict[str, Any]) -> list[tuple[int, str, int]]:
    return [(c["seq"], c["kind"], c["turn"]) for c in found["data"]]


async def test_a_fail_replay_whose_round_went_live_fails_at_its_next_call(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    rid = await created(client)
    await drive(client, store)  # (it waits for its first round: the recording ends there)
    replay = await forked(client, rid, mode="replay", on_divergence="fail")
    await drive(client, store)
    waiting = await run_of(client, replay)
    assert waiting["status"] == "requires_action"  # (the round went to its executor)
    await answer(client, waiting)
    await drive(client, store)
    failed = await run_of(client, replay)
    assert failed["status"] == "failed" and failed["error"]["type"] == "replay_diverged"
    assert of_type(await events(client, replay), "model.called") == []


async def test_a_fork_of_a_fork_counts_the_turns_before_its_own_start(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    first = await forked(client, run["id"], at=5)
    await drive(client, store)
    second = await forked(client, first, at=3)
    assert (await run_of(client, second))["turn"] == 1
    await drive(client, store)
    waiting = await run_of(client, second)
    assert [c["arguments"] for c in pending(waiting)] == [{"a": 3, "b": 4}]  # (turn 2's call)


async def test_a_fork_at_the_models_calls_has_the_originals_checkpoints(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    original = await messages(client, run["id"])
    fork = await forked(client, run["id"], at=2)
    done, _ = await finish(client, store, fork)
    assert done["status"] == "completed"
    assert (await messages(client, fork))[:2] == original[:2]
    mine = (await client.get(f"/v1/runs/{fork}/checkpoints")).json()
    theirs = (await client.get(f"/v1/runs/{run['id']}/checkpoints")).json()
    assert marks(mine) == marks(theirs)
    replayed = of_type(await events(client, fork), "model.replayed")
    assert [e["data"].get("seeded") for e in replayed] == [True]


async def test_a_fork_at_checked_calls_checks_them_again(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    script = [
        {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}, {"name": "nope"}]},
        {"text": "done"},
    ]
    model = {"provider": "scripted", "name": "demo", "script": script}
    rid = await created(client, model=model, invalid_tool_call={"action": "skip"})
    original, asked = await finish(client, store, rid)
    fork, asked_again = await finish(client, store, await forked(client, rid, at=2))
    assert (fork["status"], fork["output"]) == (original["status"], original["output"])
    assert len(asked_again) == len(asked)  # (the skipped call is not handed out)
    assert (await messages(client, fork["id"])) == (await messages(client, rid))
    run = await completed(client, store)
    dropped = await forked(client, run["id"], at=2, overrides={"tools": []})
    await drive(client, store)
    refused = await run_of(client, dropped)  # (its calls checked against its own tools)
    assert refused["status"] == "failed" and pending(refused) == [], refused


async def test_a_replay_never_answers_with_a_given_message(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    history = [
        {"role": "user", "content": "what is 2+2?"},
        {"role": "assistant", "content": "fabricated by the client: 5"},
    ]
    model = {"provider": "scripted", "name": "demo", "script": [{"text": "6"}]}
    rid = await created(client, model=model, history=history, prompt="and 3+3?")
    await drive(client, store)
    replay = await forked(client, rid, at=1, mode="replay", patch={"append": []})
    await drive(client, store)
    done = await run_of(client, replay)
    assert done["output"] != "fabricated by the client: 5"
    assert len(of_type(await events(client, replay), "replay.diverged")) == 1


async def test_a_replay_writes_each_round_so_its_failure_keeps_them(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    rid = await created(client, max_turns=1)
    failed, _ = await finish(client, store, rid)
    assert failed["status"] == "failed" and failed["error"]["type"] == "MaxTurnsError"
    replay = await forked(client, rid, mode="replay")
    await drive(client, store)
    again = await run_of(client, replay)
    assert again["status"] == "failed" and again["error"]["type"] == "MaxTurnsError"
    assert (await messages(client, replay)) == (await messages(client, rid))
    assert again["turn"] == failed["turn"] == 1


async def test_an_idempotent_fork_does_not_depend_on_the_originals_later_changes(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    rid = await created(client)
    await drive(client, store)  # (it waits for its first round: its limits can change)
    headers = {"Idempotency-Key": "fork-limits"}
    first = await client.post(f"/v1/runs/{rid}/fork", json={"at": 1}, headers=headers)
    changed = await client.post(f"/v1/runs/{rid}/limits", json={"max_model_calls": 9})
    assert changed.status_code == 200, changed.text
    again = await client.post(f"/v1/runs/{rid}/fork", json={"at": 1}, headers=headers)
    assert again.status_code == 200 and again.json()["id"] == first.json()["id"]


async def test_a_fork_that_could_make_no_model_call_is_refused(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await completed(client, store)
    refused = await client.post(
        f"/v1/runs/{run['id']}/fork", json={"at": 5, "overrides": {"max_turns": 2}}
    )
    assert refused.status_code == 422 and "max_turns" in refused.json()["detail"]
    ghost = {
        "role": "user",
        "content": [
            {
                "type": "toolresult",
                "call": "ghost",
                "name": "add",
                "content": [{"type": "text", "text": "1"}],
            }
        ],
    }
    orphan = await client.post(
        f"/v1/runs/{run['id']}/fork", json={"at": 3, "patch": {"append": [ghost]}}
    )
    assert orphan.status_code == 422 and "ghost" in orphan.json()["detail"], orphan.text
