"""One trace per run, read back with an in-memory exporter: a full lifecycle over the API
(create with the client's `traceparent` → a worker drives → suspends → results submitted
→ completes, webhooks delivered to a loopback receiver), model-call spans with the GenAI
semantic conventions' attributes, failures, and nothing at all when tracing is off."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from app import tracing
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.webhooks.outbox import Outbox
from tests.conftest import make_settings
from tests.helpers import api_client, results_for, run_body, running_worker, wait_for, wait_status
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver
from tests.mocks.replies import MockToolCall, MockUsage, Reply
from tests.mocks.server import MockProviderServer
from tests.tracing_support import Recorded, recording
from tests.worker.test_streaming import mock_providers

KEY = "trace-key"
#: Two model calls with token counts of their own (not the scripted defaults).
SCRIPT = [
    {
        "tool_calls": [
            {"name": "add", "arguments": {"a": 1, "b": 2}},
            {"name": "add", "arguments": {"a": 3, "b": 4}},
        ],
        "usage": {"input_tokens": 31, "output_tokens": 7},
    },
    {"text": "the sums are 3 and 7", "usage": {"input_tokens": 58, "output_tokens": 11}},
]


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    with recording() as r:
        yield r


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


@pytest.fixture
def hook_settings(database_url: str, store: RunStore) -> Settings:
    return make_settings(
        database_url, api_keys=KEY, webhook_secret=SECRET, webhook_allow_private=True
    )


@pytest.fixture
async def client(hook_settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    async with api_client(hook_settings, KEY) as c:
        yield c


def body_json(receiver: Receiver) -> dict[str, Any]:
    body = run_body(webhook={"url": receiver.url}).model_dump(mode="json", exclude_none=True)
    body["model"]["script"] = SCRIPT
    return body


async def lifecycle_over_the_api(
    client: httpx.AsyncClient,
    store: RunStore,
    settings: Settings,
    receiver: Receiver,
    headers: dict[str, str],
) -> str:
    """Create over the API, let a worker drive to the suspension, submit over the API, wait
    for completion and for both webhooks to be recorded as delivered."""
    created = await client.post("/v1/runs", json=body_json(receiver), headers=headers)
    assert created.status_code == 201, created.text
    run_id: str = created.json()["id"]
    service = RunService(store, settings)
    async with running_worker(store, settings):
        suspended = await wait_status(service, run_id, RunStatus.REQUIRES_ACTION)
        answer = results_for(suspended).model_dump(mode="json")
        sent = await client.post(f"/v1/runs/{run_id}/tool-results", json=answer)
        assert sent.status_code == 200, sent.text
        await wait_status(service, run_id, RunStatus.COMPLETED)
        deliveries = await wait_for(
            lambda: Outbox(store.backend).webhook_deliveries(run_id),
            lambda ds: len(ds) == 2 and all(d["status"] == "delivered" for d in ds),
        )
    assert [d["event_type"] for d in deliveries] == ["run.requires_action", "run.completed"]
    return run_id


def only(spans: list[ReadableSpan]) -> ReadableSpan:
    assert len(spans) == 1, [s.name for s in spans]
    return spans[0]


def ids(traceparent: str) -> tuple[int, int]:
    """(trace id, parent span id) of a W3C `traceparent`, sampled."""
    version, trace_id, span_id, flags = traceparent.split("-")
    assert version == "00" and int(flags, 16) & 1, traceparent
    return int(trace_id, 16), int(span_id, 16)


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def test_a_full_lifecycle_is_one_trace(
    client: httpx.AsyncClient,
    store: RunStore,
    hook_settings: Settings,
    receiver: Receiver,
    recorded: Recorded,
) -> None:
    # The client's own span: the run's trace joins it.
    client_span = recorded.provider.get_tracer("client").start_span("client request")
    headers: dict[str, str] = {}
    TraceContextTextMapPropagator().inject(headers, trace.set_span_in_context(client_span))
    run_id = await lifecycle_over_the_api(client, store, hook_settings, receiver, headers)
    client_span.end()

    spans = recorded.spans()
    trace_id = client_span.get_span_context().trace_id
    assert {s.context.trace_id for s in spans} == {trace_id}

    create = only(recorded.named("agentrun.run.create"))
    assert parent_id(create) == client_span.get_span_context().span_id
    assert create.attributes is not None and create.attributes["agentrun.run.id"] == run_id
    stored = (await store.get(run_id, scope=Scope.ALL)).config["trace"]  # type: ignore[union-attr]
    assert ids(stored["traceparent"]) == (trace_id, create.context.span_id)

    # Every later span, from whichever process, hangs off the stored create context.
    drives = sorted(recorded.named("agentrun.run.drive"), key=lambda s: s.start_time or 0)
    submit = only(recorded.named("agentrun.run.submit_tool_results"))
    deliveries = recorded.named("agentrun.webhook.deliver")
    assert len(drives) == 2 and len(deliveries) == 2
    for span in [*drives, submit, *deliveries]:
        assert parent_id(span) == create.context.span_id, span.name
    assert submit.attributes is not None
    assert submit.attributes["agentrun.tool_results.accepted"] == 2
    assert submit.attributes["agentrun.run.resumed"] is True

    # The drive spans tell the suspension and the completion.
    assert [[e.name for e in d.events] for d in drives] == [
        ["agentrun.run.requires_action"],
        ["agentrun.run.completed"],
    ]
    suspension = drives[0].events[0].attributes
    assert suspension is not None and suspension["agentrun.tool_calls.open"] == 2

    # One model call per claim, a child of it, with the GenAI attributes.
    calls = sorted(recorded.named("chat demo"), key=lambda s: s.start_time or 0)
    assert [parent_id(c) for c in calls] == [d.context.span_id for d in drives]
    expected = [(31, 7, ("tool_calls",), "msg_scripted_1"), (58, 11, ("stop",), "msg_scripted_2")]
    for call, (inp, out, finish, response_id) in zip(calls, expected, strict=True):
        a = call.attributes
        assert call.kind == SpanKind.CLIENT and a is not None
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == a["gen_ai.system"] == "scripted"
        assert a["gen_ai.request.model"] == "demo"
        assert (a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"]) == (inp, out)
        assert a["gen_ai.response.finish_reasons"] == finish
        assert a["gen_ai.response.id"] == response_id

    # Each webhook request carried the traceparent of its delivery span.
    by_event = {d.attributes["agentrun.webhook.event"]: d for d in deliveries}  # type: ignore[index]
    assert set(by_event) == {"run.requires_action", "run.completed"}
    for got in receiver.delivered:
        span = by_event[got.payload["type"]]
        assert ids(got.headers["traceparent"]) == (trace_id, span.context.span_id)
        assert span.kind == SpanKind.CLIENT
        assert span.attributes is not None
        assert span.attributes["http.response.status_code"] == 200
        assert span.attributes["server.address"] == "127.0.0.1"


async def test_a_run_created_without_a_traceparent_starts_its_own_trace(
    client: httpx.AsyncClient, recorded: Recorded, receiver: Receiver
) -> None:
    created = await client.post("/v1/runs", json=body_json(receiver))
    assert created.status_code == 201
    create = only(recorded.named("agentrun.run.create"))
    assert create.parent is None
    cancelled = await client.post(f"/v1/runs/{created.json()['id']}/cancel")
    assert cancelled.status_code == 200
    cancel = only(recorded.named("agentrun.run.cancel"))
    assert cancel.context.trace_id == create.context.trace_id
    assert parent_id(cancel) == create.context.span_id


async def test_tracing_off_records_stores_and_sends_nothing(
    client: httpx.AsyncClient, store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    # A provider that was installed and removed again: a helper that kept its tracer
    # would still record into it.
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.activate(provider)
    tracing.activate(None)
    assert not tracing.ENABLED
    headers = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    try:
        run_id = await lifecycle_over_the_api(client, store, hook_settings, receiver, headers)
        assert exporter.get_finished_spans() == ()
    finally:
        provider.shutdown()
    record = await store.get(run_id, scope=Scope.ALL)
    assert record is not None and "trace" not in record.config
    assert len(receiver.delivered) == 2
    assert all("traceparent" not in r.headers for r in receiver.delivered)


# --- model calls over a real wire, and failures --------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_wire_model_calls_carry_the_response_model_and_id(
    store: RunStore,
    settings: Settings,
    mock: MockProviderServer,
    recorded: Recorded,
    stream: bool,
) -> None:
    service = RunService(store, settings)
    factory, made = mock_providers(mock)
    mock.script(
        Reply(
            text="3",
            tool_calls=[MockToolCall("add", '{"a": 1, "b": 2}', id="call_1")],
            usage=MockUsage(input=40, output=12),
            id="chatcmpl-first",
            model="gpt-mock-2025-01-01",
        ),
        Reply(text="done", usage=MockUsage(input=70, output=15), id="chatcmpl-second"),
    )
    model = {"provider": "openai", "name": "gpt-mock", "temperature": 0.5, "max_tokens": 300}
    view, _ = await service.create_run(run_body(model=model, stream=stream))
    try:
        async with running_worker(store, settings, providers=factory):
            suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
            await service.submit_tool_results(
                results_for(suspended), run_id=view.record.id, scope=Scope.ALL
            )
            await wait_status(service, view.record.id, RunStatus.COMPLETED)
    finally:
        for provider in made:
            await provider.aclose()
    calls = sorted(recorded.named("chat gpt-mock"), key=lambda s: s.start_time or 0)
    got = [
        {k: v for k, v in (c.attributes or {}).items() if k.startswith("gen_ai.")} for c in calls
    ]
    common = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "gpt-mock",
        "gen_ai.request.temperature": 0.5,
        "gen_ai.request.max_tokens": 300,
    }
    assert got == [
        {
            **common,
            "gen_ai.response.model": "gpt-mock-2025-01-01",
            "gen_ai.response.id": "chatcmpl-first",
            "gen_ai.response.finish_reasons": ("tool_calls",),
            "gen_ai.usage.input_tokens": 40,
            "gen_ai.usage.output_tokens": 12,
        },
        {
            **common,
            "gen_ai.response.model": "gpt-mock",
            "gen_ai.response.id": "chatcmpl-second",
            "gen_ai.response.finish_reasons": ("stop",),
            "gen_ai.usage.input_tokens": 70,
            "gen_ai.usage.output_tokens": 15,
        },
    ]
    assert all(c.attributes and c.attributes["agentrun.model.stream"] is stream for c in calls)


async def test_a_failed_model_call_has_an_error_type_and_the_backoff_is_an_event(
    store: RunStore, settings: Settings, recorded: Recorded
) -> None:
    service = RunService(store, settings)
    model = {"provider": "scripted", "name": "demo", "fail_times": 1, "script": [{"text": "ok"}]}
    view, _ = await service.create_run(run_body(model=model, tools=[]))
    async with running_worker(store, settings):
        await wait_status(service, view.record.id, RunStatus.COMPLETED)
    failed, succeeded = sorted(recorded.named("chat demo"), key=lambda s: s.start_time or 0)
    assert failed.status.status_code == StatusCode.ERROR
    assert failed.attributes is not None and failed.attributes["error.type"] == "503"
    assert "gen_ai.usage.input_tokens" not in failed.attributes
    assert succeeded.status.status_code == StatusCode.UNSET
    assert succeeded.attributes is not None
    assert (
        succeeded.attributes["agentrun.model.attempt"],
        failed.attributes["agentrun.model.attempt"],
    ) == (2, 1)
    drives = sorted(recorded.named("agentrun.run.drive"), key=lambda s: s.start_time or 0)
    assert [[e.name for e in d.events] for d in drives] == [
        ["agentrun.run.queued"],
        ["agentrun.run.completed"],
    ]
    backoff = drives[0].events[0].attributes
    assert backoff is not None and backoff["agentrun.run.waiting_for"] == "backoff"
    assert {d.context.trace_id for d in drives} == {failed.context.trace_id}


async def test_a_failed_run_fails_its_drive_span(
    store: RunStore, settings: Settings, recorded: Recorded
) -> None:
    service = RunService(store, settings)
    # A tool call the run does not define fails the run (the default policy).
    model = {"provider": "scripted", "name": "demo", "script": [{"tool_calls": [{"name": "nope"}]}]}
    view, _ = await service.create_run(run_body(model=model))
    async with running_worker(store, settings):
        await wait_status(service, view.record.id, RunStatus.FAILED)
    drive = only(recorded.named("agentrun.run.drive"))
    assert drive.status.status_code == StatusCode.ERROR
    assert [e.name for e in drive.events] == ["agentrun.run.failed"]
    assert drive.attributes is not None and drive.attributes["agentrun.run.outcome"] == "failed"
