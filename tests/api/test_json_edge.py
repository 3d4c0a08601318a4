"""The text and JSON rule at the edge (app.service.jsonrules): arbitrary JSON thrown at run
creation and at result submission is either accepted and stored exactly, or refused with a
4xx that changed nothing; never a 500, never a silent change. On both databases, against
a real server (the body goes over HTTP as JSON text, NaN and lone surrogates included)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core import MAX_JSON_DEPTH
from app.main import create_app
from app.store.backend.engines import sync_url
from tests.conftest import make_settings
from tests.helpers import CLEAN_TABLES
from tests.mocks.uvicorn_thread import serve_in_thread

KEY = "edge-key"
MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [{"tool_calls": [{"name": "t", "arguments": {}}]}, {"text": "done"}],
}

# Any JSON a client could send, and more: unbounded integers, NaN and infinities, every
# code point (NUL and lone surrogates included) in keys and strings.
ANY_TEXT = st.text(st.characters(codec=None, min_codepoint=0), max_size=12)
ANY_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)


_ENGINES: dict[str, sa.Engine] = {}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(request: pytest.FixtureRequest) -> Iterator[tuple[httpx.Client, str]]:
    url = str(request.getfixturevalue(f"{request.param}_url"))
    _ENGINES[url] = engine = sa.create_engine(sync_url(url))
    request.addfinalizer(lambda: _ENGINES.pop(url).dispose())
    with engine.begin() as conn:  # `drive_once` claims any queued run: none of another test's
        for table in CLEAN_TABLES:
            conn.exec_driver_sql(f"DELETE FROM {table}")
    app = create_app(make_settings(url, api_keys=KEY))
    headers = {"Authorization": f"Bearer {KEY}"}
    with serve_in_thread(app) as base, httpx.Client(base_url=base, headers=headers) as c:
        yield c, url


def _send(client: httpx.Client, path: str, body: Any) -> httpx.Response:
    text = json.dumps(body, allow_nan=True)  # NaN/Infinity as JS literals, surrogates escaped
    return client.post(path, content=text, headers={"content-type": "application/json"})


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, with NaN never stored (it may not be accepted at all)."""
    if isinstance(a, float) and isinstance(b, float | int) and not isinstance(b, bool):
        # JSON has one number type: PostgreSQL's JSONB writes 5.145295935708499e16 back as
        # 51452959357084990, the same decimal number (read as a float, the same double).
        return math.isfinite(a) and a == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def _count(url: str) -> int:
    with _ENGINES[url].connect() as conn:
        return int(conn.execute(sa.text("SELECT count(*) FROM runs")).scalar_one())


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(metadata=st.dictionaries(ANY_TEXT, ANY_JSON, max_size=4), prompt=ANY_TEXT)
def test_create_stores_exactly_or_refuses_and_stores_nothing(
    live: tuple[httpx.Client, str], metadata: dict[str, Any], prompt: str
) -> None:
    client, url = live
    before = _count(url)
    body = {"prompt": prompt or "x", "model": MODEL, "metadata": metadata}
    response = _send(client, "/v1/runs", body)
    assert response.status_code < 500, response.text
    if response.status_code == 201:
        stored = client.get(f"/v1/runs/{response.json()['id']}").json()
        assert _same(metadata, stored["metadata"]), (metadata, stored["metadata"])
        assert _count(url) == before + 1
        client.post(f"/v1/runs/{stored['id']}/cancel")  # keep the queue for the next test
    else:
        assert response.status_code == 422, response.text
        problem = response.json()
        assert problem["type"] == "/problems/validation-error"
        assert problem["errors"][0]["loc"][0] == "body"
        assert _count(url) == before


def _parses(content: bytes) -> bool:
    try:
        json.loads(content)
    except ValueError:  # JSONDecodeError, UnicodeDecodeError, int()'s digit limit
        return False
    return True


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    head=st.binary(max_size=16),
    tail=st.binary(max_size=16) | st.just(b"9" * 4301) | st.sampled_from([b"\xff", b"\xc3("]),
)
def test_a_body_that_is_not_json_is_the_malformed_json_problem(
    live: tuple[httpx.Client, str], head: bytes, tail: bytes
) -> None:
    client, url = live
    content = b'{"prompt": "x", "metadata": {"k": ' + head + tail + b"}}"
    if _parses(content):
        return  # JSON after all: the test above covers what happens to it
    before = _count(url)
    response = client.post(
        "/v1/runs", content=content, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["type"] == "/problems/malformed-json"
    assert _count(url) == before


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(output=ANY_JSON, is_error=st.booleans())
def test_a_result_is_stored_exactly_or_refused_with_nothing_changed(
    live: tuple[httpx.Client, str], output: Any, is_error: bool
) -> None:
    client, url = live
    run_id, call_id = _waiting_run(client, url)
    before = _results(url, run_id)
    response = _send(
        client,
        f"/v1/runs/{run_id}/tool-results",
        {"results": [{"tool_call_id": call_id, "output": output, "is_error": is_error}]},
    )
    assert response.status_code < 500, response.text
    after = _results(url, run_id)
    if response.status_code == 200:
        assert _same({"output": output, "is_error": is_error}, after[0])
    else:
        assert response.status_code == 422, response.text
        assert response.json()["errors"][0]["loc"][:3] == ["body", "results", 0]
        assert after == before
    client.post(f"/v1/runs/{run_id}/cancel")  # nothing left for the next example's claim


def _waiting_run(client: httpx.Client, url: str) -> tuple[str, str]:
    import asyncio

    from app.store.backend.engines import create_engine
    from app.store.runs import RunStore
    from tests.helpers import drive_once

    created = _send(client, "/v1/runs", {"prompt": "go", "model": MODEL, "tools": [{"name": "t"}]})
    run_id = created.json()["id"]

    async def drive() -> None:
        store = RunStore(create_engine(url))
        try:
            await drive_once(store, make_settings(url))
        finally:
            await store.aclose()

    asyncio.run(drive())
    run = client.get(f"/v1/runs/{run_id}").json()
    assert run["status"] == "requires_action", run
    return run_id, run["required_action"]["tool_calls"][0]["id"]


def _results(url: str, run_id: str) -> list[Any]:
    with _ENGINES[url].connect() as conn:
        rows = conn.execute(
            sa.text("SELECT result FROM tool_calls WHERE run_id = :r ORDER BY position"),
            {"r": run_id},
        ).all()
    return [json.loads(r[0]) if isinstance(r[0], str) else r[0] for r in rows]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("metadata", {"k": "a\x00b"}, "NUL"),
        ("metadata", {"a\x00": 1}, "NUL"),
        ("metadata", {"k": "\udfff"}, "surrogate"),
        ("metadata", {"k": float("nan")}, "finite"),
        ("metadata", {"k": float("inf")}, "finite"),
        ("metadata", {"k": 2**64}, "64-bit"),
        ("metadata", {"k": _nested(MAX_JSON_DEPTH)}, "nested deeper"),
        ("metadata", {"k": _nested(5000)}, "nested deeper"),
        ("prompt", "a\x00b", "NUL"),
        ("prompt", "\ud800", "surrogate"),
        ("preamble", "\x00", "NUL"),
    ],
)
def test_each_rule_is_a_422_naming_the_field(
    live: tuple[httpx.Client, str], field: str, value: Any, why: str
) -> None:
    client, url = live
    before = _count(url)
    body = {"prompt": "x", "model": MODEL, field: value}
    text = json.dumps(body, allow_nan=True) if why != "nested deeper" else _deep_text(body)
    response = client.post("/v1/runs", content=text, headers={"content-type": "application/json"})
    assert response.status_code == 422, response.text
    problem = response.json()
    assert why in problem["detail"] or why in problem["errors"][0]["msg"], problem
    assert problem["errors"][0]["loc"][:2] == ["body", field] or why == "nested deeper"
    assert _count(url) == before
    assert response.headers.get("connection") != "close"


def test_the_deepest_allowed_value_is_stored(live: tuple[httpx.Client, str]) -> None:
    client, _ = live
    value = {"k": _nested(MAX_JSON_DEPTH - 2)}  # body → metadata → k: the limit exactly
    response = client.post(
        "/v1/runs",
        content=_deep_text({"prompt": "x", "model": MODEL, "metadata": value}),
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 201, response.text
    assert client.get(f"/v1/runs/{response.json()['id']}").json()["metadata"] == value
    client.post(f"/v1/runs/{response.json()['id']}/cancel")


def _deep_text(body: Any) -> str:
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20_000)
    try:
        return json.dumps(body)
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.parametrize(
    "path",
    ["/v1/runs/run_a%00b", "/v1/runs?cursor=a%00b", "/v1/runs/%ED%A0%80", "/v1/runs?limit=1e400"],
)
def test_ids_and_cursors_outside_the_rule_are_422(
    live: tuple[httpx.Client, str], path: str
) -> None:
    client, _ = live
    response = client.get(path)
    assert response.status_code == 422, response.text
    assert response.json()["type"] == "/problems/validation-error"
