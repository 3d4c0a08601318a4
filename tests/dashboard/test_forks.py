"""Forks from the dashboard, in process, on both back ends: "Fork from here" at each
checkpoint of a run's conversation and "Replay" of the whole run, confirmed, made as the
signed-in actor and shown on the new run's page; refusals (a split, a checkpoint past the
end, a malformed form) on the run's page with nothing made; no fork for a role without
`runs:create`."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx
from fastapi import FastAPI

from app.service.runs import RunService
from app.tenancy.keys import actor_of
from app.tenancy.operators import OperatorService
from tests.dashboard.conftest import KEY
from tests.dashboard.helpers import act, completed_run, csrf
from tests.dashboard.test_people import browser, signed_in
from tests.people import person

API = {"Authorization": f"Bearer {KEY}"}
HIDDEN = re.compile(r'<input type="hidden" name="([^"]+)" value="([^"]*)">')


def text(response: httpx.Response) -> str:
    return html.unescape(response.text)


async def runs(client: httpx.AsyncClient) -> list[str]:
    listed = await client.get("/v1/runs", params={"limit": 100}, headers=API)
    assert listed.status_code == 200, listed.text
    return [r["id"] for r in listed.json()["data"]]


async def run_json(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    got = await client.get(f"/v1/runs/{run_id}", headers=API)
    assert got.status_code == 200, got.text
    data: dict[str, Any] = got.json()
    return data


def confirmation(response: httpx.Response) -> dict[str, str]:
    """The fields the confirmation page carries on to the confirmed POST."""
    assert response.status_code == 200, response.text
    fields = dict(HIDDEN.findall(response.text))
    assert fields.pop("confirmed") == "yes"
    return {k: html.unescape(v) for k, v in fields.items()}


async def test_a_runs_page_offers_a_fork_at_each_checkpoint_and_a_replay(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    done = await completed_run(service)  # (the scripted model calls `add` once, answers)
    page = text(await admin.get(f"/admin/runs/{done.record.id}"))
    assert re.findall(r'id="fork-(\d+)"', page) == ["1", "2", "3", "4"]
    assert "Checkpoint 2: the model's calls: a fork waits for their results again" in page
    assert re.search(r'id="fork-message-4" name="message" required', page)
    assert re.findall(r'id="fork-message-(\d+)"', page) == ["1", "3", "4"]  # (not at calls)
    assert 'id="replay-form"' in page and 'id="replay"' in page
    assert 'id="run-forked-from"' not in page and 'id="run-forks"' not in page


async def test_fork_from_here_is_confirmed_made_once_and_shown_on_its_page(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    done = await completed_run(service)
    run_id = done.record.id
    asked = await act(admin, run_id, "fork", confirmed=False, at=4, message="And 2+2?")
    assert "Fork this run here?" in text(asked) and "And 2+2?" in text(asked)
    fields = confirmation(asked)
    assert re.fullmatch(r"dashboard-[0-9a-f]{32}", fields["key"])
    assert await runs(admin) == [run_id]  # nothing made before the confirmation

    made = await admin.post(f"/admin/runs/{run_id}/fork", data={**fields, "confirmed": "yes"})
    assert made.status_code == 303, made.text
    location = made.headers["location"]
    fork_id = re.fullmatch(r"/admin/runs/(run_\w+)\?done=fork", location)
    assert fork_id is not None
    again = await admin.post(f"/admin/runs/{run_id}/fork", data={**fields, "confirmed": "yes"})
    assert again.status_code == 303 and again.headers["location"] == location  # (its key)
    assert sorted(await runs(admin)) == sorted([run_id, fork_id[1]])

    fork = await run_json(admin, fork_id[1])
    assert fork["forked_from"] == {
        "run_id": run_id,
        "checkpoint": 4,
        "mode": "fork",
        "on_divergence": "live",
    }
    events = await service.store.events(fork_id[1])
    assert events[0].actor == actor_of(KEY)
    shown = text(await admin.get(location))
    assert "This run was just made from the checkpoint named below." in shown
    forked = re.search(r'id="run-forked-from">(.*?)</dd>', shown)
    assert forked is not None and f'href="/admin/runs/{run_id}"' in forked[1]
    assert "at checkpoint 4" in forked[1] and "replay" not in forked[1]
    assert "And 2+2?" in shown  # (its conversation: the original's, then the message)
    original = text(await admin.get(f"/admin/runs/{run_id}"))
    listed = re.search(r'id="run-forks">(.*?)</dd>', original)
    assert listed is not None and f'href="/admin/runs/{fork_id[1]}"' in listed[1]
    assert "(at checkpoint 4; " in listed[1] and "replay" not in listed[1]


async def test_a_fork_with_a_recorded_result_replaced_from_the_page(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    done = await completed_run(service)
    run_id = done.record.id
    page = text(await admin.get(f"/admin/runs/{run_id}"))
    call_ids = re.findall(r'id="fork-result-([^"]+)"', page)
    assert len(call_ids) == 1  # (the run's one result, with the checkpoint after it)
    call_id = call_ids[0]
    at = re.search(
        rf'name="at" value="(\d+)">\s*<input type="hidden" name="tool_call_id" value="{call_id}"',
        page,
    )
    assert at is not None and at[1] == "3"
    asked = await act(
        admin, run_id, "fork", confirmed=False, at=3, tool_call_id=call_id, output="42\nexactly"
    )
    assert "Fork this run here?" in text(asked)
    assert f"the result of call {call_id} becomes" in text(asked)
    fields = confirmation(asked)
    assert (fields["tool_call_id"], fields["output"]) == (call_id, "42\nexactly")
    made = await admin.post(f"/admin/runs/{run_id}/fork", data={**fields, "confirmed": "yes"})
    assert made.status_code == 303, made.text
    fork_id = made.headers["location"].split("/")[-1].split("?")[0]
    assert (await run_json(admin, fork_id))["forked_from"]["checkpoint"] == 3
    got = await admin.get(f"/v1/runs/{fork_id}/messages", params={"limit": 10}, headers=API)
    original = await admin.get(f"/v1/runs/{run_id}/messages", params={"limit": 10}, headers=API)
    forked = [e["message"] for e in got.json()["data"]]
    recorded = [e["message"] for e in original.json()["data"]][:3]
    assert forked[:2] == recorded[:2]  # (all but the result, byte for byte)
    result = forked[2]["content"][0]
    assert result["type"] == "toolresult" and result["call"] == call_id
    assert result["content"] == [{"type": "text", "text": "42\nexactly"}]
    assert recorded[2]["content"][0]["content"] != result["content"]
    unknown = await act(admin, run_id, "fork", at=3, tool_call_id="call_nope", output="1")
    assert unknown.status_code == 422 and "call_nope" in text(unknown)


async def test_replay_from_the_page(admin: httpx.AsyncClient, service: RunService) -> None:
    done = await completed_run(service)
    run_id = done.record.id
    asked = await act(admin, run_id, "fork", confirmed=False, mode="replay", on_divergence="fail")
    assert "Replay this run?" in text(asked) and "Yes, make the replay" in text(asked)
    made = await admin.post(
        f"/admin/runs/{run_id}/fork", data={**confirmation(asked), "confirmed": "yes"}
    )
    assert made.status_code == 303, made.text
    replay_id = made.headers["location"].split("/")[-1].split("?")[0]
    assert (await run_json(admin, replay_id))["forked_from"] == {
        "run_id": run_id,
        "checkpoint": 1,
        "mode": "replay",
        "on_divergence": "fail",
    }
    shown = text(await admin.get(made.headers["location"]))
    assert "at checkpoint 1 (replay; at its first difference: fail)" in shown
    original = text(await admin.get(f"/admin/runs/{run_id}"))
    listed = re.search(r'id="run-forks">(.*?)</dd>', original)
    assert listed is not None and f'href="/admin/runs/{replay_id}"' in listed[1]
    assert "(at checkpoint 1, replay; " in listed[1]


async def test_refusals_are_shown_on_the_runs_page_and_make_nothing(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    done = await completed_run(service)
    run_id = done.record.id
    call_id = done.pending[0].call_id if done.pending else None
    split = await act(admin, run_id, "fork", at=2, message="never mind")
    assert split.status_code == 409
    assert 'id="action-error"' in split.text and "would split tool call" in text(split)
    if call_id is not None:
        assert call_id in text(split)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"at": 4}, "the model's answer"),  # (an answer and nothing appended)
        ({"at": 99}, "has 4 messages"),
        ({"at": "x"}, "at: expected a checkpoint's number"),
        ({"at": "-1"}, "at: expected a checkpoint's number"),
        ({"at": "0"}, "at: Input should be greater than or equal to 1"),
        ({"mode": "rewind"}, "mode: fork or replay"),
        ({"on_divergence": "maybe", "mode": "replay"}, "on_divergence: live or fail"),
        ({"key": "mine"}, "key: expected the key"),
        ({"message": "nul \x00 here"}, "NUL"),
    ]
    for fields, message in cases:
        refused = await act(admin, run_id, "fork", **fields)
        assert refused.status_code == 422, (fields, refused.text[:300])
        assert message in text(refused), (fields, message)
    assert await runs(admin) == [run_id]  # nothing made
    missing = await act(admin, "run_missing000000000000", "fork", at=1)
    assert missing.status_code == 404


async def test_a_role_without_runs_create_is_offered_no_fork_and_refused_one(
    app: FastAPI, service: RunService, people: OperatorService, admin: httpx.AsyncClient
) -> None:
    done = await completed_run(service)
    run_id = done.record.id
    await person(people, "olga", role="operator")
    async with browser(app) as olga:
        token = await signed_in(olga, "olga")
        page = text(await olga.get(f"/admin/runs/{run_id}"))
        assert 'id="fork-1"' not in page and 'id="replay-form"' not in page
        refused = await olga.post(
            f"/admin/runs/{run_id}/fork",
            data={"csrf_token": token, "confirmed": "yes", "at": "3"},
        )
        assert refused.status_code == 403 and "runs:create" in text(refused)
    assert csrf(admin) and await runs(admin) == [run_id]
