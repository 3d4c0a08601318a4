"""Arbitrary decision bodies thrown at `POST /v1/runs/{id}/approvals` on both databases,
against a real server: each is decided, or refused with a 4xx problem that wrote
nothing; never a 500."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.approvals import policies
from tests.api.test_json_edge import _ENGINES, ANY_JSON, ANY_TEXT, _send, live
from tests.conftest import make_settings

__all__ = ["live"]  # (the fixture: a server per database)

ARGUMENTS = {"amount": 500}
MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [{"tool_calls": [{"name": "t", "arguments": ARGUMENTS}]}, {"text": "done"}],
}
TOOL = {
    "name": "t",
    "parameters": {"type": "object", "properties": {"amount": {"type": "integer"}}},
    "approval": "always",
}
HASH = policies.arguments_hash(ARGUMENTS)

DECISION = st.fixed_dictionaries(
    {
        "tool_call_id": st.sampled_from(["call_1_0"]) | ANY_TEXT | ANY_JSON,
        "arguments_hash": st.just(HASH) | ANY_TEXT | ANY_JSON,
        "action": st.sampled_from(["approve", "reject"]) | ANY_JSON,
    },
    optional={
        "message": ANY_TEXT | ANY_JSON,
        "arguments": st.dictionaries(ANY_TEXT, ANY_JSON, max_size=3) | ANY_JSON,
        "extra": ANY_JSON,
    },
)
BODY = st.fixed_dictionaries({"decisions": st.lists(DECISION, max_size=3)}) | ANY_JSON


def _gated_run(client: httpx.Client, url: str) -> str:
    from app import features
    from app.store.backend.engines import create_engine
    from app.store.runs import RunStore
    from tests.helpers import drive_once

    created = _send(client, "/v1/runs", {"prompt": "go", "model": MODEL, "tools": [TOOL]})
    assert created.status_code == 201, created.text

    async def drive() -> None:
        store = features.install(RunStore(create_engine(url)), make_settings(url))
        try:
            await drive_once(store, make_settings(url))
        finally:
            await store.aclose()

    asyncio.run(drive())
    run_id: str = created.json()["id"]
    return run_id


def _stored(url: str, run_id: str) -> tuple[Any, ...]:
    with _ENGINES[url].connect() as conn:
        calls = conn.execute(
            sa.text("SELECT approval, result_hash FROM tool_calls WHERE run_id = :r"),
            {"r": run_id},
        ).all()
        version = conn.execute(
            sa.text("SELECT version, last_event_seq FROM runs WHERE id = :r"), {"r": run_id}
        ).one()
    return tuple(calls), tuple(version)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=BODY)
def test_a_decision_body_is_decided_or_refused_with_nothing_written(
    live: tuple[httpx.Client, str], body: Any
) -> None:
    client, url = live
    run_id = _gated_run(client, url)
    before = _stored(url, run_id)
    response = _send(client, f"/v1/runs/{run_id}/approvals", body)
    assert response.status_code < 500, response.text
    if response.status_code == 200:
        assert response.json()["id"] == run_id
    else:
        assert 400 <= response.status_code < 500, response.text
        assert response.headers["content-type"].startswith("application/problem+json")
        assert _stored(url, run_id) == before
    client.post(f"/v1/runs/{run_id}/cancel")  # nothing left for the next example's claim
