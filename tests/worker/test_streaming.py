"""Streaming runs (`"stream": true`): text deltas become `model.delta` events, the lease is
kept alive while the stream runs, and the streamed and blocking paths end in identical
histories and usage (scripted provider, and real wire formats through the mock server)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from app.clock import SYSTEM_CLOCK
from app.core import AssistantMessage, Text, Usage
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.core.serde import message_to_dict
from app.providers.base import (
    ModelRequest,
    Provider,
    ProviderTurn,
    StreamItem,
    TextDelta,
    TurnComplete,
)
from app.providers.registry import provider_from_settings
from app.service.runs import RunService, RunView
from app.service.tokens import new_key
from app.settings import Settings
from app.store import changes
from app.store.run_records import EventRecord, NewEvent
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from app.worker.providers import make_provider
from app.worker.streaming import DeltaPublisher
from tests.helpers import results_for, run_body, running_worker, wait_status
from tests.mocks.replies import MockToolCall, MockUsage, Reply
from tests.mocks.server import MockProviderServer

ProviderFactory = Callable[[Mapping[str, Any]], Provider]

LONG_TEXT = (
    "Streaming answers arrive in pieces; the worker batches them into model.delta events "
    "so that a reader can follow the answer live without one write per token."
)


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings)


def scripted(*entries: dict[str, Any]) -> dict[str, Any]:
    return {"provider": "scripted", "name": "demo", "script": list(entries)}


async def drive(
    store: RunStore, settings: Settings, providers: ProviderFactory | None = None
) -> RunStatus | None:
    """Claim the next due run and drive it until it suspends or ends."""
    key = await store.secret("callback_key", new_key)
    factory = providers or (lambda spec: make_provider(spec, settings, clock=SYSTEM_CLOCK))
    driver = RunDriver(store, settings, "test-worker", factory, key, clock=SYSTEM_CLOCK)
    now = datetime.now(UTC)
    record = await store.claim("test-worker", now, now + timedelta(seconds=settings.lease_seconds))
    assert record is not None, "no due run to claim"
    return await driver.drive(record)


async def run_to_end(
    service: RunService, body: Any, providers: ProviderFactory | None = None
) -> RunView:
    """Create a run and drive it to its end, answering every tool round (sum of args)."""
    view, _ = await service.create_run(body)
    run_id = view.record.id
    for _ in range(10):
        status = await drive(service.store, service.settings, providers)
        current = await service.get_run(run_id, scope=Scope.ALL)
        assert current.record.status == status
        if status == RunStatus.REQUIRES_ACTION:
            await service.submit_tool_results(results_for(current), run_id=run_id, scope=Scope.ALL)
            continue
        assert status in (RunStatus.COMPLETED, RunStatus.FAILED), status
        return current
    raise AssertionError("the run did not end")


def deltas(events: list[EventRecord], turn: int | None = None) -> list[EventRecord]:
    return [
        e for e in events if e.type == "model.delta" and (turn is None or e.data["turn"] == turn)
    ]


def delta_text(events: list[EventRecord], turn: int | None = None) -> str:
    return "".join(e.data["text"] for e in deltas(events, turn))


async def history(service: RunService, view: RunView) -> list[dict[str, Any]]:
    return [
        message_to_dict(m)
        for m in (await service.load_run(view.record.id, scope=Scope.ALL)).messages()
    ]


# --- deltas from the scripted provider ------------------------------------------------------


async def test_streamed_scripted_run_publishes_deltas_equal_to_the_output(
    service: RunService,
) -> None:
    body = run_body(model=scripted({"text": LONG_TEXT}), stream=True)
    done = await run_to_end(service, body)
    record = done.record
    assert record.status == RunStatus.COMPLETED
    assert record.output == LONG_TEXT
    events = await service.store.events(record.id)
    assert deltas(events), "no model.delta events"
    assert all(e.data["turn"] == 1 for e in deltas(events))
    assert delta_text(events) == record.output
    types = [e.type for e in events]
    # Deltas come before the turn's `model.called` (the claim's final write).
    assert types[0:2] == ["run.created", "run.claimed"]
    assert set(types[2 : types.index("model.called")]) == {"model.delta"}
    assert types[types.index("model.called") :] == ["model.called", "run.completed"]
    called = next(e for e in events if e.type == "model.called")
    assert called.data["stream"] is True
    # Sequence numbers stay dense; deltas never moved the fencing token.
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert record.last_event_seq == len(events)
    assert record.version == 3  # created 1, claimed 2, completed 3: as a blocking run


async def test_deltas_are_published_per_turn(service: RunService) -> None:
    body = run_body(
        model=scripted(
            {
                "text": "Let me add those two numbers for you.",
                "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
            },
            {"text": "The sum of one and two is three."},
        ),
        stream=True,
    )
    done = await run_to_end(service, body)
    assert done.record.output == "The sum of one and two is three."
    events = await service.store.events(done.record.id)
    assert delta_text(events, 1) == "Let me add those two numbers for you."
    assert delta_text(events, 2) == "The sum of one and two is three."


async def test_blocking_runs_publish_no_deltas(service: RunService) -> None:
    done = await run_to_end(service, run_body(model=scripted({"text": LONG_TEXT})))
    events = await service.store.events(done.record.id)
    assert done.record.output == LONG_TEXT
    assert deltas(events) == []
    assert "stream" not in next(e for e in events if e.type == "model.called").data


# --- parity: the same conversations, blocking and streamed ----------------------------------

INVALID = {"tool_calls": [{"name": "sub", "arguments": {"a": 5, "b": 2}}]}

CONVERSATIONS: dict[str, dict[str, Any]] = {
    "text_only": {"model": scripted({"text": LONG_TEXT})},
    "one_tool_round": {
        "model": scripted(
            {
                "text": "I will call add.",
                "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
                "usage": {"input_tokens": 31, "output_tokens": 9},
            },
            {"text": "The answer is 3.", "usage": {"input_tokens": 52, "output_tokens": 6}},
        )
    },
    "parallel_tools": {},  # run_body's default: two `add` calls in one turn, then text
    "invalid_call_retry": {
        "model": scripted(INVALID, {"text": "recovered after the retry"}),
        "invalid_tool_call": {"action": "retry", "feedback": "use add", "max_retries": 1},
    },
    "invalid_call_retry_exhausted": {
        "model": scripted(INVALID),
        "invalid_tool_call": {"action": "retry", "max_retries": 1},
    },
    "invalid_call_skip": {
        "model": scripted(INVALID, {"text": "skipped it"}),
        "invalid_tool_call": {"action": "skip", "reason": "sub is not available"},
    },
    "invalid_call_repair": {
        "model": scripted(INVALID, {"text": "repaired and done"}),
        "invalid_tool_call": {"action": "repair", "repair_to": {"sub": "add"}},
    },
    "length_truncated_text": {
        "model": scripted({"text": "a partial answ", "finish_reason": "length"}),
    },
}


@pytest.mark.parametrize("name", sorted(CONVERSATIONS))
async def test_streamed_and_blocking_runs_end_identically(service: RunService, name: str) -> None:
    overrides = CONVERSATIONS[name]
    blocking = await run_to_end(service, run_body(**overrides))
    streamed = await run_to_end(service, run_body(**overrides, stream=True))

    assert streamed.record.status == blocking.record.status
    assert streamed.record.output == blocking.record.output
    assert streamed.record.error == blocking.record.error
    assert await history(service, streamed) == await history(service, blocking)
    assert streamed.record.usage == blocking.record.usage
    assert streamed.record.turn == blocking.record.turn
    blocking_run = await service.load_run(blocking.record.id, scope=Scope.ALL)
    streamed_run = await service.load_run(streamed.record.id, scope=Scope.ALL)
    assert streamed_run.usage() == blocking_run.usage()
    assert streamed_run.completion_calls() == blocking_run.completion_calls()
    assert streamed_run.status == blocking_run.status

    # The streamed run published every turn's text; the blocking run none.
    assert deltas(await service.store.events(blocking.record.id)) == []
    events = await service.store.events(streamed.record.id)
    for turn in range(1, streamed.record.turn + 1):
        said = "".join(
            c.text
            for m in streamed_run.messages()
            if isinstance(m, AssistantMessage) and m.id == f"msg_scripted_{turn}"
            for c in m.content
            if isinstance(c, Text)
        )
        assert delta_text(events, turn) == said


# --- batching, heartbeats, fencing ---------------------------------------------------------


class TrickleProvider:
    """Streams `text` one character at a time with a pause between characters."""

    name = "trickle"

    def __init__(self, text: str, pause: float) -> None:
        self.text = text
        self.pause = pause

    def turn(self, request: ModelRequest) -> ProviderTurn:
        return ProviderTurn(
            choice=(Text(self.text),),
            usage=Usage(3, 4, 7),
            message_id=f"msg_{request.turn}",
            finish_reason="stop",
        )

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        await asyncio.sleep(self.pause * len(self.text))
        return self.turn(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        for ch in self.text:
            await asyncio.sleep(self.pause)
            yield TextDelta(ch)
        yield TurnComplete(self.turn(request))


async def test_a_trickling_stream_is_batched_not_one_write_per_token(
    service: RunService,
) -> None:
    text = "x" * 150
    provider = TrickleProvider(text, 0.002)
    body = run_body(model=scripted(), tools=[], stream=True)
    done = await run_to_end(service, body, lambda spec: provider)
    assert done.record.output == text
    events = await service.store.events(done.record.id)
    assert delta_text(events) == text
    assert 1 <= len(deltas(events)) < len(text) / 3


async def test_publisher_writes_full_batches_at_once(store: RunStore, service: RunService) -> None:
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    record = await store.claim("w", now, now + timedelta(seconds=5))
    assert record is not None and record.id == view.record.id
    publisher = DeltaPublisher(
        store, record.id, record.version, 1, lambda: datetime.now(UTC), interval=60, max_chars=10
    )
    publisher.start()
    publisher.add("0123456789abc")  # a full batch: written without waiting for the interval
    for _ in range(200):
        if publisher.writes:
            break
        await asyncio.sleep(0.01)
    assert publisher.writes == 1
    publisher.add("tail")
    await publisher.close()  # the rest is written on close
    texts = [e.data["text"] for e in deltas(await store.events(record.id))]
    assert texts == ["0123456789abc", "tail"]
    assert (await store.get(record.id, scope=Scope.ALL)).version == record.version  # type: ignore[union-attr]


async def test_the_lease_is_heartbeaten_while_a_long_stream_runs(
    store: RunStore, settings: Settings
) -> None:
    # A heartbeat every third of the lease: one may come up to two thirds late (a busy
    # machine, a full suite: 1.3 s of a 2 s lease; a 1 s lease was lost once) before the
    # lease lapses.
    settings = settings.model_copy(update={"lease_seconds": 2.0})
    service = RunService(store, settings)
    text = "y" * 90
    provider = TrickleProvider(text, 0.07)  # ~6.3 s: over three lease lengths
    view, _ = await service.create_run(run_body(model=scripted(), tools=[], stream=True))
    async with running_worker(store, settings, providers=lambda spec: provider):
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    events = await store.events(view.record.id)
    types = [e.type for e in events]
    assert "run.lease_lost" not in types
    assert types.count("run.claimed") == 1
    assert done.record.output == text
    assert delta_text(events) == text


async def test_a_cancel_mid_stream_stops_the_worker(service: RunService) -> None:
    provider = TrickleProvider("z" * 400, 0.01)
    view, _ = await service.create_run(run_body(model=scripted(), tools=[], stream=True))
    run_id = view.record.id
    task = asyncio.create_task(drive(service.store, service.settings, lambda spec: provider))
    for _ in range(500):
        if deltas(await service.store.events(run_id)):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("no delta was published")
    await service.cancel(run_id, scope=Scope.ALL)
    assert await asyncio.wait_for(task, 10) is None  # the lease was lost
    record = (await service.get_run(run_id, scope=Scope.ALL)).record
    assert record.status == RunStatus.CANCELLED
    events = await service.store.events(run_id)
    cancelled = next(e.seq for e in events if e.type == "run.cancelled")
    assert all(e.seq < cancelled for e in deltas(events))
    # The abandoned call is on the ledger, after the cancel that took the run.
    assert [e.type for e in events[-2:]] == ["run.cancelled", "model.aborted"]
    assert events[-1].data["stream"] is True
    assert "model.called" not in [e.type for e in events]


async def test_append_events_is_fenced_and_keeps_the_version(
    store: RunStore, service: RunService
) -> None:
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    one, two = NewEvent("model.delta", {"turn": 1, "text": "a"}), NewEvent("x.y", {"k": 2})
    # Not running yet: refused.
    assert not await store.append_events(view.record.id, view.record.version, [one], now)
    record = await store.claim("w", now, now + timedelta(seconds=5))
    assert record is not None
    # A stale fencing token: refused, nothing written.
    assert not await store.append_events(record.id, record.version - 1, [one], now)
    assert await store.append_events(record.id, record.version, [], now)
    assert (await store.get(record.id, scope=Scope.ALL)).last_event_seq == record.last_event_seq  # type: ignore[union-attr]
    assert await store.append_events(record.id, record.version, [one, two], now)
    assert await store.append_events(record.id, record.version, [one], now)
    after = await store.get(record.id, scope=Scope.ALL)
    assert after is not None
    assert after.version == record.version
    assert after.last_event_seq == record.last_event_seq + 3
    events = await store.events(record.id)
    assert [(e.seq, e.type, e.data) for e in events[-3:]] == [
        (record.last_event_seq + 1, "model.delta", {"turn": 1, "text": "a"}),
        (record.last_event_seq + 2, "x.y", {"k": 2}),
        (record.last_event_seq + 3, "model.delta", {"turn": 1, "text": "a"}),
    ]
    # The holder's fenced transition still applies, and its events follow.
    moved, _ = await store.apply(
        record.id, changes.release(record.version, "w", now), now, scope=Scope.ALL
    )
    assert moved is not None and moved.last_event_seq == record.last_event_seq + 4
    seqs = [e.seq for e in await store.events(record.id)]
    assert seqs == list(range(1, moved.last_event_seq + 1))


# --- real wire formats through the mock server ----------------------------------------------

WIRES = ["openai", "openai_responses", "anthropic"]


def mock_providers(mock: MockProviderServer) -> tuple[ProviderFactory, list[Any]]:
    made: list[Any] = []

    def factory(spec: Mapping[str, Any]) -> Provider:
        provider = provider_from_settings(
            spec["provider"],
            openai_api_key="sk-test",
            openai_base_url=mock.openai_base_url,
            anthropic_api_key="sk-ant-test",
            anthropic_base_url=mock.anthropic_base_url,
            timeout=10,
        )
        made.append(provider)
        return provider

    return factory, made


def wire_conversation() -> list[Reply]:
    return [
        Reply(
            text="Let me add those.",
            tool_calls=[MockToolCall("add", '{"a": 1, "b": 2}', id="call_1", item_id="fc_1")],
            usage=MockUsage(input=40, output=12, cached=8),
            id="msg_wire_1",
            chunk_delay=0.005,
        ),
        Reply(
            text="The sum of 1 and 2 is 3, computed by the add tool.",
            usage=MockUsage(input=70, output=15),
            id="msg_wire_2",
            chunk_delay=0.005,
        ),
    ]


@pytest.mark.parametrize("wire", WIRES)
async def test_worker_streams_sse_from_a_wire_provider_end_to_end(
    store: RunStore, settings: Settings, mock: MockProviderServer, wire: str
) -> None:
    service = RunService(store, settings)
    factory, made = mock_providers(mock)
    mock.script(*wire_conversation())
    body = run_body(model={"provider": wire, "name": "mock-model"}, stream=True)
    view, _ = await service.create_run(body)
    try:
        async with running_worker(store, settings, providers=factory):
            suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
            assert [(c.call_id, c.name, c.arguments) for c in suspended.pending] == [
                ("call_1", "add", {"a": 1, "b": 2})
            ]
            await service.submit_tool_results(
                results_for(suspended), run_id=view.record.id, scope=Scope.ALL
            )
            done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    finally:
        for provider in made:
            await provider.aclose()
    assert done.record.output == "The sum of 1 and 2 is 3, computed by the add tool."
    assert [r.body.get("stream") for r in mock.requests] == [True, True]
    events = await store.events(view.record.id)
    assert delta_text(events, 1) == "Let me add those."
    assert delta_text(events, 2) == done.record.output
    run = await service.load_run(done.record.id, scope=Scope.ALL)
    assert len(run.messages()) == 4
    assert run.usage().output_tokens == 27  # input counting (cached or not) is per wire
    assert run.usage() == sum((c.usage for c in run.completion_calls()), Usage())
    assert len(run.completion_calls()) == 2  # one per model call, usage from the stream


@pytest.mark.parametrize("wire", WIRES)
async def test_wire_streaming_parity_with_blocking(
    service: RunService, mock: MockProviderServer, wire: str
) -> None:
    factory, made = mock_providers(mock)
    body = {"model": {"provider": wire, "name": "mock-model"}}
    try:
        mock.script(*wire_conversation())
        blocking = await run_to_end(service, run_body(**body), factory)
        assert [bool(r.body.get("stream")) for r in mock.requests] == [False, False]
        mock.reset()  # the mock numbers ids by request: both runs see the same numbers
        mock.script(*wire_conversation())
        streamed = await run_to_end(service, run_body(**body, stream=True), factory)
        assert [bool(r.body.get("stream")) for r in mock.requests] == [True, True]
    finally:
        for provider in made:
            await provider.aclose()
    assert streamed.record.status == blocking.record.status == RunStatus.COMPLETED
    assert streamed.record.output == blocking.record.output
    assert await history(service, streamed) == await history(service, blocking)
    assert streamed.record.usage == blocking.record.usage
    b_run = await service.load_run(blocking.record.id, scope=Scope.ALL)
    s_run = await service.load_run(streamed.record.id, scope=Scope.ALL)
    assert s_run.usage() == b_run.usage()
    strip = [(c.usage, c.message_id, c.finish_reason) for c in b_run.completion_calls()]
    assert [(c.usage, c.message_id, c.finish_reason) for c in s_run.completion_calls()] == strip


async def test_a_stream_that_fails_to_start_backs_off_like_a_blocking_call(
    service: RunService,
) -> None:
    body = run_body(model={**scripted({"text": LONG_TEXT}), "fail_times": 1}, stream=True)
    view, _ = await service.create_run(body)
    assert await drive(service.store, service.settings) == RunStatus.QUEUED
    waiting = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert waiting.waiting_reason is not None
    assert waiting.waiting_reason["type"] == "backoff"
    assert waiting.waiting_reason["error"]["status"] == 503
    events = await service.store.events(view.record.id)
    assert deltas(events) == []
    assert [e.type for e in events][-1] == "model.failed"


async def test_a_stream_cut_mid_answer_keeps_its_deltas_then_backs_off(
    service: RunService, mock: MockProviderServer
) -> None:
    factory, made = mock_providers(mock)
    mock.script(Reply(text=LONG_TEXT, stop_after_events=6))
    body = run_body(model={"provider": "openai", "name": "mock-model"}, stream=True)
    view, _ = await service.create_run(body)
    try:
        assert await drive(service.store, service.settings, factory) == RunStatus.QUEUED
    finally:
        for provider in made:
            await provider.aclose()
    record = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert record.waiting_reason is not None and record.waiting_reason["type"] == "backoff"
    events = await service.store.events(view.record.id)
    partial = delta_text(events, 1)
    assert partial and LONG_TEXT.startswith(partial) and partial != LONG_TEXT
    types = [e.type for e in events]
    # The partial text is void: `model.failed` follows it, and the turn is asked again.
    assert types[-1] == "model.failed"
    assert max(e.seq for e in deltas(events)) < events[-1].seq
    assert (await service.load_run(record.id, scope=Scope.ALL)).status == "PreparingRequest"
