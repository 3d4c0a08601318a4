"""Whatever a client sends the AG-UI endpoint, it answers a 4xx problem before any stream
(and, for a body that is no `RunAgentInput`, creates no run) or a stream of AG-UI events
that ends with RUN_FINISHED or RUN_ERROR: never a 500. Arbitrary JSON, and bodies shaped
like `RunAgentInput` with arbitrary parts, against a real server with a worker (both back
ends)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.main import create_app
from app.store.migrate import upgrade_to_head
from tests.api.test_json_edge import ANY_JSON, ANY_TEXT
from tests.conftest import fresh_database, make_settings
from tests.mocks.uvicorn_thread import serve_in_thread
from tests.protocols.agui.agui import EVENTS, parse

KEY = "fuzz-key"
MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [{"tool_calls": [{"name": "get_weather", "arguments": {}}]}, {"text": "ok"}],
}


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def live(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[httpx.Client]:
    """The app with a worker slot, in a thread, on a database of its own (its worker
    must not drive the runs other tests left in the shared ones)."""
    with contextlib.ExitStack() as stack:
        if request.param == "postgres":
            url = stack.enter_context(fresh_database(request.getfixturevalue("postgres_server")))
        else:
            url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'agentrun.db'}"
            upgrade_to_head(url)
        yield from _served(url)


def _served(url: str) -> Iterator[httpx.Client]:
    app = create_app(make_settings(url, api_keys=KEY), worker_slots=1)
    headers = {"Authorization": f"Bearer {KEY}"}
    with (
        serve_in_thread(app) as base,
        httpx.Client(base_url=base, headers=headers, timeout=30) as client,
    ):
        agent = {
            "name": "fuzz",
            "description": "answers, after calling get_weather if it may",
            "model": MODEL,
            "invalid_tool_call": {"action": "skip", "reason": "no such tool"},
        }
        made = client.post("/v1/agents", json=agent)
        assert made.status_code == 201, made.text
        yield client


def _send(client: httpx.Client, body: Any) -> httpx.Response:
    text = json.dumps(body, allow_nan=True)  # NaN/Infinity as JS literals, surrogates escaped
    return client.post("/ag-ui/fuzz", content=text, headers={"content-type": "application/json"})


def _count(client: httpx.Client) -> int:
    return len(client.get("/v1/runs", params={"limit": 100}).json()["data"])


def _answered(response: httpx.Response) -> None:
    """A problem, or a whole stream of valid AG-UI events."""
    assert response.status_code < 500, response.text
    if response.status_code != 200:
        assert response.headers["content-type"].startswith("application/problem+json")
        assert response.json()["status"] == response.status_code
        return
    events = parse(response.text)
    assert events[0]["type"] == "RUN_STARTED", events
    assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events
    assert events[-1].get("code") != "internal-error", events
    for event in events:
        EVENTS.validate_python(event)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=ANY_JSON)
def test_arbitrary_json_is_a_problem_and_makes_no_run(live: httpx.Client, body: Any) -> None:
    before = _count(live)
    response = _send(live, body)
    assert response.status_code in (400, 422), response.text
    _answered(response)
    assert _count(live) == before


TEXT = st.text(max_size=6)
#: JSON any run could hold (mostly), to reach past the body's checks.
SOME_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=6,
)
MAYBE_JSON = SOME_JSON | SOME_JSON | ANY_JSON
WORDS = st.sampled_from(["hi", "weather in Oslo?", "thanks"])
CALL_ID = st.sampled_from(["call_1_0", "call_2_0"]) | TEXT
PART = st.fixed_dictionaries({"type": st.just("text"), "text": ANY_TEXT}) | st.fixed_dictionaries(
    {
        "type": st.sampled_from(["image", "audio"]),
        "source": st.fixed_dictionaries(
            {"type": st.sampled_from(["data", "url"]), "value": TEXT, "mimeType": TEXT}
        ),
    }
)
MESSAGE = st.one_of(
    st.fixed_dictionaries(
        {
            "id": TEXT,
            "role": st.just("user"),
            "content": WORDS | ANY_TEXT | st.lists(PART, max_size=2),
        }
    ),
    st.fixed_dictionaries(
        {"id": TEXT, "role": st.just("assistant")},
        optional={
            "content": TEXT,
            "toolCalls": st.lists(
                st.fixed_dictionaries(
                    {
                        "id": CALL_ID,
                        "type": st.just("function"),
                        "function": st.fixed_dictionaries(
                            {"name": TEXT, "arguments": st.sampled_from(["{}", "[", '{"a":1}'])}
                        ),
                    }
                ),
                max_size=2,
            ),
        },
    ),
    st.fixed_dictionaries(
        {"id": TEXT, "role": st.just("tool"), "toolCallId": CALL_ID, "content": ANY_TEXT},
        optional={"error": TEXT},
    ),
    st.fixed_dictionaries(
        {"id": TEXT, "role": st.sampled_from(["system", "developer"]), "content": TEXT}
    ),
)
TOOL = st.fixed_dictionaries(
    {"name": st.sampled_from(["get_weather", "lookup"]) | TEXT, "description": TEXT},
    optional={"parameters": MAYBE_JSON},
)
RESUME = st.fixed_dictionaries(
    {
        "interruptId": st.sampled_from(["budget", f"call_1_0@0#{'a' * 64}"]) | TEXT,
        "status": st.sampled_from(["resolved", "cancelled"]),
    },
    optional={
        "payload": MAYBE_JSON
        | st.fixed_dictionaries(
            {"action": st.sampled_from(["approve", "reject"]) | TEXT},
            optional={"message": TEXT, "arguments": SOME_JSON},
        )
    },
)
BODY = st.fixed_dictionaries(
    {
        "threadId": st.sampled_from(["t1", "t2", "t3"]) | ANY_TEXT,
        "runId": st.sampled_from(["r1", "r2", "r3", "r4"]) | ANY_TEXT,
        # (ending with a user message or tool messages, mostly: a turn or an answer)
        "messages": st.tuples(
            st.lists(MESSAGE, max_size=3),
            st.lists(
                st.fixed_dictionaries({"id": TEXT, "role": st.just("user"), "content": WORDS}),
                max_size=1,
            )
            | st.lists(
                st.fixed_dictionaries(
                    {"id": TEXT, "role": st.just("tool"), "toolCallId": CALL_ID, "content": WORDS}
                ),
                max_size=2,
            ),
        ).map(lambda parts: parts[0] + parts[1]),
    },
    optional={
        "tools": st.lists(TOOL, max_size=2),
        "resume": st.lists(RESUME, max_size=2),
        "state": MAYBE_JSON,
        "context": st.lists(st.fixed_dictionaries({"description": TEXT, "value": TEXT})),
        "forwardedProps": MAYBE_JSON,
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=BODY)
def test_run_agent_inputs_are_a_problem_or_a_whole_stream(
    live: httpx.Client, body: dict[str, Any]
) -> None:
    _answered(_send(live, body))
