"""Every route and every refusal over HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from app.api.problems import CATALOGUE
from app.store.runs import RunStore
from app.tenancy.keys import actor_of
from tests.api.conftest import KEY
from tests.helpers import drive_once, run_body

PROBLEM = "application/problem+json"


def body(**overrides: Any) -> dict[str, Any]:
    return run_body(**overrides).model_dump(mode="json", exclude_none=True)


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith(PROBLEM)
    doc: dict[str, Any] = response.json()
    assert doc["type"] == f"/problems/{code}"
    assert doc["status"] == status
    assert doc["title"] == CATALOGUE[code][1]
    assert doc["detail"]
    return doc


async def create(client: httpx.AsyncClient, **overrides: Any) -> dict[str, Any]:
    response = await client.post("/v1/runs", json=body(**overrides))
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


async def suspend(client: httpx.AsyncClient, store: RunStore, **overrides: Any) -> dict[str, Any]:
    run = await create(client, **overrides)
    settings = client.app.state.settings  # type: ignore[attr-defined]
    await drive_once(store, settings)
    got = await client.get(f"/v1/runs/{run['id']}")
    assert got.json()["status"] == "requires_action", got.text
    return got.json()  # type: ignore[no-any-return]


def answers(run: dict[str, Any]) -> dict[str, Any]:
    calls = run["required_action"]["tool_calls"]
    return {
        "results": [
            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))} for c in calls
        ]
    }


async def test_create_returns_201_with_location(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/runs", json=body(metadata={"k": "v"}))
    assert response.status_code == 201
    run = response.json()
    assert response.headers["location"] == f"/v1/runs/{run['id']}"
    assert run["status"] == "queued" and run["metadata"] == {"k": "v"}
    assert run["required_action"] is None and run["max_turns"] == 4


async def test_get_and_list(client: httpx.AsyncClient) -> None:
    ids = [(await create(client))["id"] for _ in range(3)]
    got = await client.get(f"/v1/runs/{ids[0]}")
    assert got.status_code == 200 and got.json()["id"] == ids[0]
    page = (await client.get("/v1/runs", params={"limit": 2})).json()
    assert [r["id"] for r in page["data"]] == ids[::-1][:2]
    rest = (await client.get("/v1/runs", params={"limit": 2, "cursor": page["next_cursor"]})).json()
    assert [r["id"] for r in rest["data"]] == [ids[0]] and rest["next_cursor"] is None
    queued = (await client.get("/v1/runs", params={"status": "queued"})).json()
    assert len(queued["data"]) == 3
    none = (await client.get("/v1/runs", params={"status": "completed"})).json()
    assert none["data"] == []


async def test_full_lifecycle_over_http(client: httpx.AsyncClient, store: RunStore) -> None:
    run = await suspend(client, store)
    action = run["required_action"]
    assert action["type"] == "submit_tool_results"
    assert [c["name"] for c in action["tool_calls"]] == ["add", "add"]
    assert "/v1/callbacks/" in action["callback_url"]
    assert run["expires_at"] is not None
    posted = await client.post(f"/v1/runs/{run['id']}/tool-results", json=answers(run))
    assert posted.status_code == 200, posted.text
    assert posted.json()["resumed"] is True
    assert posted.json()["run"]["status"] == "queued"
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    done = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert done["status"] == "completed" and done["output"] == "the sums are 3 and 7"
    events = (await client.get(f"/v1/runs/{run['id']}/events")).json()["data"]
    assert events[0]["type"] == "run.created" and events[-1]["type"] == "run.completed"
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    later = (await client.get(f"/v1/runs/{run['id']}/events", params={"after": 3})).json()
    assert [e["seq"] for e in later["data"]] == list(range(4, len(events) + 1))


async def test_partial_results_and_idempotent_resend(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    run = await suspend(client, store)
    first, second = answers(run)["results"]
    url = f"/v1/runs/{run['id']}/tool-results"
    one = await client.post(url, json={"results": [first]})
    assert one.status_code == 200 and one.json()["resumed"] is False
    calls = one.json()["run"]["required_action"]["tool_calls"]
    assert [c["answered"] for c in calls] == [True, False]
    again = await client.post(url, json={"results": [first]})
    assert again.status_code == 200 and again.json()["accepted"] == []
    conflict = await client.post(url, json={"results": [{**first, "output": "99"}]})
    doc = assert_problem(conflict, 409, "tool-result-conflict")
    assert doc["tool_call_id"] == first["tool_call_id"]
    unknown = await client.post(url, json={"results": [{"tool_call_id": "nope", "output": "1"}]})
    assert_problem(unknown, 422, "tool-call-not-pending")
    done = await client.post(url, json={"results": [second]})
    assert done.json()["resumed"] is True
    late = await client.post(url, json={"results": [second]})
    assert assert_problem(late, 409, "run-state-conflict")["current_status"] == "queued"


async def test_callback_token_route(client: httpx.AsyncClient, store: RunStore) -> None:
    run = await suspend(client, store)
    other_model = {
        "provider": "scripted",
        "name": "demo",
        "script": [{"tool_calls": [{"id": "other_1", "name": "add", "arguments": {"a": 1}}]}],
    }
    other = await suspend(client, store, model=other_model)
    url = run["required_action"]["callback_url"].replace("http://127.0.0.1:8000", "")
    anonymous = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    wrong_run = await anonymous.post(url, json=answers(other))
    assert_problem(wrong_run, 422, "tool-call-not-pending")
    ok = await anonymous.post(url, json=answers(run))
    assert ok.status_code == 200 and ok.json()["resumed"] is True
    stale = await anonymous.post(url, json=answers(run))
    assert_problem(stale, 404, "callback-token-invalid")
    guessed = await anonymous.post("/v1/callbacks/guess/tool-results", json=answers(run))
    assert_problem(guessed, 404, "callback-token-invalid")
    await anonymous.aclose()


async def test_resolution_route(client: httpx.AsyncClient, store: RunStore) -> None:
    model = {
        "provider": "scripted",
        "name": "demo",
        "script": [{"tool_calls": [{"name": "sub", "arguments": {"a": 1}}]}, {"text": "ok"}],
    }
    run = await suspend(client, store, model=model, invalid_tool_call={"action": "ask"})
    action = run["required_action"]
    assert action == {
        "type": "resolve_invalid_tool_call",
        "tool_name": "sub",
        "tool_call_id": "call_1_0",
        "arguments": '{"a":1}',
    }
    url = f"/v1/runs/{run['id']}/resolution"
    bad = await client.post(url, json={"action": "explode"})
    assert_problem(bad, 422, "validation-error")
    missing = await client.post(url, json={"action": "repair"})
    assert_problem(missing, 422, "invalid-request")
    ok = await client.post(url, json={"action": "repair", "tool_name": "add"})
    assert ok.status_code == 200 and ok.json()["status"] == "queued"
    twice = await client.post(url, json={"action": "fail"})
    assert_problem(twice, 409, "run-state-conflict")


def invalid_then(*steps: dict[str, Any]) -> dict[str, Any]:
    """A scripted model whose first turn calls `sub` (not a defined tool), then `steps`."""
    first = {"tool_calls": [{"name": "sub", "arguments": {"a": 1}}]}
    return {"provider": "scripted", "name": "demo", "script": [first, *steps]}


async def test_retry_resolution_asks_the_model_again(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    again = {"tool_calls": [{"name": "sub", "arguments": {"a": 2}}]}
    model = invalid_then(again, {"text": "done"})
    run = await suspend(client, store, model=model, invalid_tool_call={"action": "ask"})
    settings = client.app.state.settings  # type: ignore[attr-defined]
    url = f"/v1/runs/{run['id']}/resolution"
    for feedback in ("use add", "really, use add"):  # every retry a person picks is honoured
        retried = await client.post(url, json={"action": "retry", "feedback": feedback})
        assert retried.status_code == 200, retried.text
        assert retried.json()["status"] == "queued"
        await drive_once(store, settings)
        if feedback == "use add":
            got = (await client.get(f"/v1/runs/{run['id']}")).json()
            assert got["required_action"]["arguments"] == '{"a":2}', got
    done = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert done["status"] == "completed" and done["output"] == "done", done
    messages = (await client.get(f"/v1/runs/{run['id']}/messages")).json()["data"]
    assert "really, use add" in str(messages)


@pytest.mark.parametrize(
    "resolution", [{"action": "skip", "reason": "no"}, {"action": "repair", "tool_name": "add"}]
)
async def test_skip_and_repair_resolutions_go_on(
    client: httpx.AsyncClient, store: RunStore, resolution: dict[str, Any]
) -> None:
    model = invalid_then({"text": "done"})
    run = await suspend(client, store, model=model, invalid_tool_call={"action": "ask"})
    posted = await client.post(f"/v1/runs/{run['id']}/resolution", json=resolution)
    assert posted.status_code == 200 and posted.json()["status"] == "queued", posted.text
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    got = (await client.get(f"/v1/runs/{run['id']}")).json()
    if got["status"] == "requires_action":  # repaired: the call now runs as `add`
        assert got["required_action"]["tool_calls"][0]["name"] == "add"
    else:
        assert got["status"] == "completed" and got["output"] == "done", got


async def test_cancel_route(client: httpx.AsyncClient) -> None:
    run = await create(client)
    ok = await client.post(f"/v1/runs/{run['id']}/cancel")
    assert ok.status_code == 200 and ok.json()["status"] == "cancelled"
    again = await client.post(f"/v1/runs/{run['id']}/cancel")
    assert assert_problem(again, 409, "run-state-conflict")["current_status"] == "cancelled"
    missing = await client.post("/v1/runs/run_missing/cancel")
    assert_problem(missing, 404, "run-not-found")


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/runs/run_missing"),
        ("get", "/v1/runs/run_missing/events"),
        ("post", "/v1/runs/run_missing/cancel"),
    ],
)
async def test_unknown_run_is_404(client: httpx.AsyncClient, method: str, path: str) -> None:
    assert_problem(await client.request(method, path), 404, "run-not-found")


async def test_results_for_unknown_run_is_404(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/runs/run_missing/tool-results", json={"results": [{"tool_call_id": "a", "output": 1}]}
    )
    assert_problem(response, 404, "run-not-found")


@pytest.mark.parametrize(
    "content",
    [
        b'{"prompt": ',
        b'{"prompt": "x"} and more',
        b'{"prompt": "\xff\xfe"}',  # not UTF-8
        b'{"prompt": "x", "max_turns": ' + b"9" * 4301 + b"}",  # past int("…")'s digit limit
    ],
    ids=["truncated", "trailing", "invalid-utf8", "huge-int"],
)
@pytest.mark.parametrize("path", ["/v1/runs", "/v1/runs/run_x/tool-results"])
async def test_malformed_json_is_400(client: httpx.AsyncClient, content: bytes, path: str) -> None:
    response = await client.post(
        path, content=content, headers={"content-type": "application/json"}
    )
    assert_problem(response, 400, "malformed-json")
    assert response.json()["instance"] == path


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ({}, "validation-error"),
        ({"prompt": "", "model": {"provider": "scripted", "name": "d"}}, "validation-error"),
        ({"prompt": "x", "model": {"provider": "nope", "name": "d"}}, "validation-error"),
        (
            {"prompt": "x", "model": {"provider": "scripted", "name": "d"}, "max_turns": 0},
            "validation-error",
        ),
        (
            {"prompt": "x", "model": {"provider": "scripted", "name": "d"}, "surprise": 1},
            "validation-error",
        ),
        (  # a rule between items, which the schema cannot state
            {
                "prompt": "x",
                "model": {"provider": "scripted", "name": "d"},
                "tools": [{"name": "a"}, {"name": "a"}],
            },
            "invalid-request",
        ),
    ],
)
async def test_invalid_bodies_are_422_and_create_nothing(
    client: httpx.AsyncClient, payload: dict[str, Any], code: str
) -> None:
    assert_problem(await client.post("/v1/runs", json=payload), 422, code)
    assert (await client.get("/v1/runs")).json()["data"] == []


async def test_tool_choice_naming_an_undefined_tool_is_refused(client: httpx.AsyncClient) -> None:
    response = await client.post("/v1/runs", json=body(tool_choice={"name": "nope"}))
    assert_problem(response, 422, "invalid-request")


async def test_oversized_body_is_413_before_parsing(client: httpx.AsyncClient) -> None:
    big = body(prompt="x" * 30_000)
    assert_problem(await client.post("/v1/runs", json=big), 413, "payload-too-large")

    async def chunks() -> Any:  # no Content-Length: refused while streaming
        for _ in range(40):
            yield b"x" * 1000

    streamed = await client.post(
        "/v1/runs", content=chunks(), headers={"content-type": "application/json"}
    )
    assert_problem(streamed, 413, "payload-too-large")
    assert (await client.get("/v1/runs")).json()["data"] == []


async def test_unknown_route_is_a_problem(client: httpx.AsyncClient) -> None:
    assert_problem(await client.get("/v1/nothing-here"), 404, "not-found")
    assert_problem(await client.delete("/v1/runs"), 405, "method-not-allowed")


async def test_idempotency_replay_mismatch_and_concurrency(client: httpx.AsyncClient) -> None:
    headers = {"Idempotency-Key": "abc"}
    first = await client.post("/v1/runs", json=body(), headers=headers)
    assert first.status_code == 201
    replay = await client.post("/v1/runs", json=body(), headers=headers)
    assert replay.status_code == 200 and replay.json()["id"] == first.json()["id"]
    assert replay.headers["idempotent-replayed"] == "true"
    other = await client.post("/v1/runs", json=body(prompt="different"), headers=headers)
    assert_problem(other, 422, "idempotency-key-reused")
    responses = await asyncio.gather(
        *[client.post("/v1/runs", json=body(), headers={"Idempotency-Key": "k2"}) for _ in range(6)]
    )
    statuses = sorted(r.status_code for r in responses)
    created = [r for r in responses if r.status_code == 201]
    assert len(created) == 1, statuses
    assert set(statuses) <= {200, 201, 409}
    for r in responses:
        if r.status_code == 409:
            assert_problem(r, 409, "idempotency-in-flight")
        else:
            assert r.json()["id"] == created[0].json()["id"]
    runs = (await client.get("/v1/runs")).json()["data"]
    assert len(runs) == 2


async def test_in_flight_duplicate_is_409(client: httpx.AsyncClient) -> None:
    in_flight = client.app.state.idempotency_in_flight  # type: ignore[attr-defined]
    in_flight.add(("default", "busy"))  # (keys are per tenant: the key's is `default`)
    response = await client.post("/v1/runs", json=body(), headers={"Idempotency-Key": "busy"})
    assert_problem(response, 409, "idempotency-in-flight")


async def test_health_and_readiness(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).json() == {"status": "ok"}
    assert (await client.get("/readyz")).json() == {"status": "ok"}


async def test_problem_types_are_documented(client: httpx.AsyncClient) -> None:
    page = await client.get("/problems/run-state-conflict")
    assert page.status_code == 200 and "current_status" in page.text
    assert (await client.get("/problems/nope")).status_code == 404
    spec = (await client.get("/openapi.json")).json()
    create_responses = spec["paths"]["/v1/runs"]["post"]["responses"]
    for status in ("400", "401", "409", "413", "422"):
        assert PROBLEM in create_responses[status]["content"], status
    assert (await client.get("/docs")).status_code == 200


async def test_integers_beyond_64_bits_are_refused(client: httpx.AsyncClient) -> None:
    """Found by schemathesis: such a number used to crash the request hash (500)."""
    response = await client.post("/v1/runs", json={**body(), "metadata": {"n": 2**70}})
    assert_problem(response, 422, "validation-error")
    assert (await client.get("/v1/runs")).json()["data"] == []


async def test_every_submitted_result_records_who_sent_it(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    """A partial submission with a key and the rest through the callback URL: each
    `tool_result.received` names its own submitter, not only the final `run.resumed`."""
    run = await suspend(client, store)
    first, second = answers(run)["results"]
    by_key = await client.post(f"/v1/runs/{run['id']}/tool-results", json={"results": [first]})
    assert by_key.status_code == 200
    url = run["required_action"]["callback_url"].replace("http://127.0.0.1:8000", "")
    anonymous = httpx.AsyncClient(transport=client._transport, base_url="http://test")
    by_token = await anonymous.post(url, json={"results": [second]})
    await anonymous.aclose()
    assert by_token.status_code == 200 and by_token.json()["resumed"] is True
    events = (await client.get(f"/v1/runs/{run['id']}/events")).json()["data"]
    received = {
        e["data"]["tool_call_id"]: e["actor"] for e in events if e["type"] == "tool_result.received"
    }
    assert received == {first["tool_call_id"]: actor_of(KEY), second["tool_call_id"]: "callback"}
    resumed = [e for e in events if e["type"] == "run.resumed"]
    assert [e["actor"] for e in resumed] == ["callback"]
