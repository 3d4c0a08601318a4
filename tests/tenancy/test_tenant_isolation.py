"""A key of one tenant cannot tell that another tenant's runs exist.

The walk is generated from `app.openapi()`: every operation (an operation added later is
walked without a new test) is called with tenant B's admin key against tenant A's objects
(its path parameters filled from A's run, queue and lease), on both back ends. Each answer
must be a 404 (`run-not-found`, `tool-call-lease-not-found`), a refusal, or an answer that
holds nothing of A (an empty list, zero usage): no id, text or token of A appears in any
answer, and A's runs are as they were afterwards (and still complete)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI

from app.core.lifecycle import RunStatus
from app.settings import Settings
from app.store.fold import fold
from app.store.runs import RunStore
from app.store.schema import tenants
from app.tenancy.access import Role, principal_of
from tests.api.test_runs_api import answers, body
from tests.conftest import make_settings
from tests.helpers import drive_once

A, B = "tenant-a", "tenant-b"
KEYS = {
    "key-of-a": principal_of(A, Role.ADMIN, "key:a"),
    "key-of-b": principal_of(B, Role.ADMIN, "key:b"),
}
#: Text only A's runs hold (prompt, metadata): it must never reach B.
MARKER = "alpha-only-7f3c"
TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": f"done {MARKER}"}]}
#: Operations whose caller holds no key: a callback token is a capability for one run's
#: one suspension, whoever holds it (it is not a tenant's key).
B_MODEL = {"provider": "scripted", "name": "demo"}
KEYLESS = {"/v1/callbacks/{token}/tool-results"}


@asynccontextmanager
async def tenant_clients(
    settings: Settings,
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, str]]:
    """The app, and clients holding an admin key of A and of B (database keys, made as
    `agentrun keys create` makes them); A's key's id."""
    from app.main import create_app
    from app.tenancy.keys import KeyAdmin

    app = create_app(settings)
    transport = httpx.ASGITransport(app=app)

    def client(key: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {key}"}
        return httpx.AsyncClient(transport=transport, base_url="http://test", headers=headers)

    async with app.router.lifespan_context(app):
        keys: KeyAdmin = app.state.keys
        of_a = await keys.create(A, "admin", "a-backend")
        of_b = await keys.create(B, "admin", "b-backend")
        async with client(of_a.secret) as a, client(of_b.secret) as b:
            yield app, a, b, of_a.key.id


@pytest.fixture
async def world(
    database_url: str, store: RunStore
) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, dict[str, Any]]]:
    """Tenant A's runs (suspended on its `gpu` queue with a live lease, suspended on a
    call it answers itself, completed and folded, idempotent), and B's clients."""
    async with store.engine.begin() as conn:
        await conn.execute(tenants.delete().where(tenants.c.id.in_([A, B])))
        await conn.execute(
            tenants.insert(),
            [{"id": t, "name": t, "limits": {}, "created_at": datetime.now(UTC)} for t in (A, B)],
        )
    # (A deployment key: never open mode, whatever the database's keys.)
    settings = make_settings(database_url, api_keys="deployment-key")
    async with tenant_clients(settings) as (app, a, b, key_id):
        meta = {"secret": MARKER}
        queued = await a.post("/v1/runs", json=body(tool_queue="gpu", metadata=meta))
        direct = await a.post(
            "/v1/runs",
            json=body(prompt=f"add {MARKER}", metadata=meta),
            headers={"Idempotency-Key": "shared-key"},
        )
        done = await a.post("/v1/runs", json=body(model=TEXT_ONLY, metadata=meta))
        for r in (queued, direct, done):
            assert r.status_code == 201, r.text
        for _ in range(3):
            await drive_once(store, settings)
        assert await fold(store.engine) == 1
        runs = {
            name: (await a.get(f"/v1/runs/{r.json()['id']}")).json()
            for name, r in (("queued", queued), ("direct", direct), ("done", done))
        }
        assert runs["done"]["status"] == "completed"
        agent = await a.post(
            "/v1/agents",
            json={"name": "a-agent", "description": f"A's {MARKER}", "model": TEXT_ONLY},
        )
        assert agent.status_code == 201, agent.text
        schedule = await a.post(
            "/v1/schedules",
            json={
                "key": "a-sched",
                "cron": "0 6 * * *",
                "run": {"agent": "a-agent", "prompt": f"A's {MARKER}"},
            },
        )
        assert schedule.status_code == 201, schedule.text
        lease = await a.post("/v1/queues/gpu/lease", json={"wait": 0, "limit": 1})
        (call,) = lease.json()["calls"]
        callback = runs["direct"]["required_action"]["callback_url"]
        objects = {
            "runs": runs,
            "run_id": runs["direct"]["id"],
            "queue": "gpu",
            "lease_token": call["lease_token"],
            "token": callback.rsplit("/", 2)[-2],
            "tool_call_id": runs["direct"]["required_action"]["tool_calls"][0]["id"],
            "key_id": key_id,
            "tenant_id": A,
            "name": "a-agent",
            "version": 1,
            "key": "a-sched",
        }
        yield app, a, b, objects


#: A run id of the right shape that no tenant has.
MISSING_RUN = "run_" + "Z" * 21


def missing_lease(objects: dict[str, Any]) -> str:
    """A lease token of A's shape naming a run nobody has (signature and all)."""
    return MISSING_RUN + objects["lease_token"][len(objects["run_id"]) :]


def secrets_of(objects: dict[str, Any]) -> set[str]:
    """Every id and text of A's that an answer to B could leak."""
    out = {MARKER, A, objects["lease_token"], objects["token"], objects["key_id"], "a-backend"}
    for run in objects["runs"].values():
        out.add(run["id"])
        for c in (run.get("required_action") or {}).get("tool_calls", []):
            out.add(c["id"])
    return out


# --- bodies: a valid request for each operation, aimed at A's objects ------------------------


def minimal(schema: dict[str, Any], components: dict[str, Any]) -> Any:
    """A small instance of a JSON schema: its required members, each at its simplest."""
    if "$ref" in schema:
        return minimal(components[schema["$ref"].rsplit("/", 1)[-1]], components)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return minimal(schema[key][0], components)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {k: minimal(props[k], components) for k in schema.get("required", [])}
    if kind == "array":
        return [minimal(schema.get("items", {}), components)] * schema.get("minItems", 0)
    if kind in ("integer", "number"):
        return schema.get("minimum", 1)
    if kind == "boolean":
        return False
    return "x"


#: What a body of each schema holds to reach A's objects (else the minimal instance).
def aimed(objects: dict[str, Any]) -> dict[str, Callable[[], Any]]:
    return {
        # Continue A's completed run (a 404 to B), reusing A's Idempotency-Key (below).
        "RunCreate": lambda: {"prompt": "hi", "previous_run_id": objects["runs"]["done"]["id"]},
        "ToolResultsIn": lambda: {
            "results": [{"tool_call_id": objects["tool_call_id"], "output": "3"}]
        },
        "ResolutionIn": lambda: {"action": "fail"},
        "LeaseIn": lambda: {"wait": 0, "limit": 100},
        # (B's own agent: another name, so A's stays unknown to B)
        "AgentIn": lambda: {"name": "b-own", "description": "B's", "model": B_MODEL},
        "AgentUpdate": lambda: {"description": "B's", "model": B_MODEL},
        # (B's own schedule: another key, so A's stays unknown to B)
        "ScheduleIn": lambda: {
            "key": "b-own",
            "cron": "0 6 * * *",
            "run": {"prompt": "B's", "model": B_MODEL},
        },
        "SchedulePatch": lambda: {"note": "B's"},
        "BackfillIn": lambda: {"from": "2026-01-01T00:00:00Z", "to": "2026-01-02T00:00:00Z"},
    }


def request_body(op: dict[str, Any], doc: dict[str, Any], objects: dict[str, Any]) -> Any:
    content = op.get("requestBody", {}).get("content", {}).get("application/json")
    if content is None:
        return None
    schema = content["schema"]
    name = schema.get("$ref", "").rsplit("/", 1)[-1]
    components = doc["components"]["schemas"]
    make = aimed(objects).get(name)
    return make() if make is not None else minimal(schema, components)


def path_of(template: str, objects: dict[str, Any]) -> str:
    def fill(m: re.Match[str]) -> str:
        name = m.group(1)
        assert name in objects, f"no object of A for the path parameter {name!r} of {template}"
        return str(objects[name])

    return re.sub(r"\{(\w+)\}", fill, template)


def operations(app: FastAPI) -> list[tuple[str, str, dict[str, Any]]]:
    doc = app.openapi()
    return [
        (method.upper(), path, op)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if method in ("get", "post", "put", "patch", "delete") and path not in KEYLESS
    ]


def variants(method: str, op: dict[str, Any]) -> list[dict[str, str]]:
    """Header sets to call an operation with: its JSON form and, where it streams, its
    server-sent event form; a create also reuses A's Idempotency-Key."""
    out = [{}]
    ok = op.get("responses", {}).get("200", {}).get("content", {})
    if "text/event-stream" in ok:
        out.append({"Accept": "text/event-stream"})
    if any(p.get("name") == "idempotency-key" for p in op.get("parameters", [])):
        out.append({"Idempotency-Key": "shared-key"})
    return out


async def test_every_operation_with_a_foreign_key_finds_nothing_of_the_other_tenant(
    world: tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, dict[str, Any]],
) -> None:
    app, a, b, objects = world
    doc = app.openapi()
    hidden = secrets_of(objects)
    before = {n: (await a.get(f"/v1/runs/{r['id']}")).json() for n, r in objects["runs"].items()}
    walked: list[str] = []
    missing = {
        **objects,
        "lease_token": missing_lease(objects),  # (first: it holds the run's id)
        "run_id": MISSING_RUN,
        "key_id": "0" * len(objects["key_id"]),
        "name": "no-such-agent",
    }
    by_id = ("{run_id}", "{lease_token}", "{key_id}", "{name}")
    for method, template, op in operations(app):
        url = path_of(template, objects)
        params = {"timeout": "0"} if template.endswith("/wait") else None
        for headers in variants(method, op):
            payload = request_body(op, doc, objects)
            response = await b.request(method, url, json=payload, headers=headers, params=params)
            text = response.text
            # (What B sent, B knows: a 404 may name the id it was asked for.)
            sent = url + orjson.dumps(payload).decode()
            leaked = sorted(s for s in hidden if s in text and s not in sent)
            where = f"{method} {template} {headers}: {response.status_code} {text[:300]}"
            assert not leaked, f"{where} shows A's {leaked}"
            assert response.status_code < 500, where
            if any(p in template for p in by_id):
                assert response.status_code == 404, where
                # A foreign run (lease, key) reads exactly as one that does not exist.
                other = path_of(template, missing)
                absent = await b.request(
                    method, other, json=payload, headers=headers, params=params
                )
                assert (absent.status_code, absent.json()["type"]) == (
                    404,
                    response.json()["type"],
                ), where
                same = absent.text
                for name in ("lease_token", "run_id", "key_id", "name"):
                    same = same.replace(str(missing[name]), str(objects[name]))
                assert same == text, where
            if "{tenant_id}" in template:  # (managing tenants is the deployment's own)
                assert response.status_code == 403, where
            if method == "POST" and template == "/v1/runs" and "Idempotency-Key" not in headers:
                assert response.status_code == 404, where  # previous_run_id of A's run
            walked.append(f"{method} {template}")
    assert "POST /v1/runs/{run_id}/cancel" in walked and "GET /v1/usage" in walked
    # Nothing B did changed A's runs, and A's queue still holds A's call for A.
    for name, run in objects["runs"].items():
        now = (await a.get(f"/v1/runs/{run['id']}")).json()
        assert now == before[name]
        events = (await a.get(f"/v1/runs/{run['id']}/events")).json()["data"]
        assert not [e for e in events if "b-backend" in (e["actor"] or "")], events
    # A's agent is as it was.
    assert (await a.get("/v1/agents/a-agent")).json()["version"] == 1
    # A's key is as it was.
    assert (await a.get(f"/v1/keys/{objects['key_id']}")).json()["state"] == "active"


async def test_lists_usage_and_queues_are_per_tenant(
    world: tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, dict[str, Any]], store: RunStore
) -> None:
    _app, a, b, objects = world
    mine = {r["id"] for r in objects["runs"].values()}
    for status in (None, "requires_action", "completed"):
        params = {} if status is None else {"status": status}
        assert (await b.get("/v1/runs", params=params)).json()["data"] == []
        listed = {r["id"] for r in (await a.get("/v1/runs", params=params)).json()["data"]}
        assert listed and listed <= mine
    assert (await b.get("/v1/usage")).json()["calls"] == 0
    assert (await a.get("/v1/usage")).json()["calls"] >= 1
    # B's run on its own `gpu` queue: B leases B's call, never A's (A's second call).
    theirs = await b.post("/v1/runs", json=body(tool_queue="gpu"))
    await drive_once(store, make_settings_of(a))
    leased = (await b.post("/v1/queues/gpu/lease", json={"wait": 0, "limit": 100})).json()
    assert {c["run_id"] for c in leased["calls"]} == {theirs.json()["id"]}
    left = (await a.post("/v1/queues/gpu/lease", json={"wait": 0, "limit": 100})).json()
    assert {c["run_id"] for c in left["calls"]} == {objects["runs"]["queued"]["id"]}


async def test_idempotency_keys_and_conversations_are_per_tenant(
    world: tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, dict[str, Any]], store: RunStore
) -> None:
    _app, a, b, objects = world
    replay = await a.post(
        "/v1/runs",
        json=body(prompt=f"add {MARKER}", metadata={"secret": MARKER}),
        headers={"Idempotency-Key": "shared-key"},
    )
    assert replay.status_code == 200 and replay.json()["id"] == objects["run_id"]
    fresh = await b.post("/v1/runs", json=body(), headers={"Idempotency-Key": "shared-key"})
    assert fresh.status_code == 201, fresh.text
    assert fresh.json()["id"] != objects["run_id"]
    done = objects["runs"]["done"]["id"]
    foreign = await b.post("/v1/runs", json={"prompt": "more", "previous_run_id": done})
    assert foreign.status_code == 404 and foreign.json()["type"] == "/problems/run-not-found"
    own = await a.post("/v1/runs", json={"prompt": "more", "previous_run_id": done})
    assert own.status_code == 201, own.text


async def test_the_other_tenants_run_still_completes_after_the_walk(
    world: tuple[FastAPI, httpx.AsyncClient, httpx.AsyncClient, dict[str, Any]], store: RunStore
) -> None:
    _app, a, b, objects = world
    run = objects["runs"]["direct"]
    refused = await b.post(f"/v1/runs/{run['id']}/tool-results", json=answers(run))
    assert refused.status_code == 404
    accepted = await a.post(f"/v1/runs/{run['id']}/tool-results", json=answers(run))
    assert accepted.json()["resumed"], accepted.text
    await drive_once(store, make_settings_of(a))
    assert (await a.get(f"/v1/runs/{run['id']}")).json()["status"] == RunStatus.COMPLETED.value


def make_settings_of(client: httpx.AsyncClient) -> Settings:
    transport = client._transport
    assert isinstance(transport, httpx.ASGITransport)
    settings: Settings = transport.app.state.settings  # type: ignore[attr-defined]
    return settings
