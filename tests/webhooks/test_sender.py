"""Signed, retried, deduplicable webhooks from the outbox; usage ledger totals."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from standardwebhooks import Webhook, WebhookVerificationError

from app.clock import SYSTEM_CLOCK, FakeClock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.errors import InvalidRequest
from app.service.runs import RunService
from app.service.schemas import ToolResultsIn
from app.settings import Settings
from app.store.runs import RunStore
from app.webhooks import hooks as webhooks
from app.webhooks.outbox import Outbox
from app.webhooks.sender import WebhookSender
from tests.conftest import make_settings
from tests.helpers import drive_once, results_for, run_body, running_worker, wait_for, wait_status
from tests.metrics_support import counted, sample
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


@pytest.fixture
def hook_settings(database_url: str) -> Settings:
    return make_settings(
        database_url, webhook_secret=SECRET, webhook_allow_private=True, webhook_max_attempts=5
    )


async def test_signatures_verify_and_tampering_is_detected(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}))
    async with running_worker(store, hook_settings):
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.requires_action")), bool)
    got = receiver.of_type("run.requires_action")[0]
    data = got.payload["data"]
    assert data["run_id"] == view.record.id and data["status"] == "requires_action"
    assert [c["name"] for c in data["tool_calls"]] == ["add", "add"]
    assert "/v1/callbacks/" in data["callback_url"]
    verifier = Webhook(SECRET)
    assert verifier.verify(got.body, got.headers)["type"] == "run.requires_action"
    with pytest.raises(WebhookVerificationError):
        verifier.verify(got.body.replace(b"add", b"sub"), got.headers)
    stale = {**got.headers, "webhook-timestamp": str(int(time.time()) - 3600)}
    with pytest.raises(WebhookVerificationError):
        verifier.verify(got.body, stale)
    with pytest.raises(WebhookVerificationError):
        Webhook("whsec_" + "A" * 32).verify(got.body, got.headers)


async def test_executor_answers_through_the_callback_url_and_gets_completed(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}))
    async with running_worker(store, hook_settings):
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.requires_action")), bool)
        data = receiver.of_type("run.requires_action")[0].payload["data"]
        token = data["callback_url"].split("/v1/callbacks/")[1].split("/")[0]
        body = ToolResultsIn.model_validate(
            {
                "results": [
                    {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
                    for c in data["tool_calls"]
                ]
            }
        )
        await service.submit_tool_results(body, token=token, scope=Scope.ALL)
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.completed")), bool)
    done = receiver.of_type("run.completed")[0].payload["data"]
    assert done["run_id"] == view.record.id and done["output"] == "the sums are 3 and 7"


async def test_receiver_down_then_up_gets_each_event_once_with_a_stable_id(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    receiver.fail_next = 3
    service = RunService(store, hook_settings)
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}))
    await drive_once(store, hook_settings)  # suspended; the delivery waits in the outbox
    clock = FakeClock()
    sender = WebhookSender(store, hook_settings, "w", SECRET, clock=clock)
    deadline = time.monotonic() + 30
    try:
        while not receiver.of_type("run.requires_action"):
            assert time.monotonic() < deadline
            # Pretend time has passed so the backoff (under 4 s for a third retry) elapses
            # at once; the signature's timestamp stays within the receiver's tolerance.
            clock.advance(5)
            await sender.deliver_due()
            await asyncio.sleep(0.01)
    finally:
        await sender.aclose()
    assert len(receiver.attempts) == 4
    assert len(set(receiver.attempts)) == 1, "webhook-id must be stable across retries"
    assert len(receiver.of_type("run.requires_action")) == 1
    deliveries = await Outbox(store.backend).webhook_deliveries(view.record.id)
    assert deliveries[0]["status"] == "delivered" and deliveries[0]["attempts"] == 4
    attempts = await Outbox(store.backend).webhook_attempts(deliveries[0]["webhook_id"])
    assert [a["status_code"] for a in attempts] == [500, 500, 500, 200]
    assert all(a["latency_ms"] >= 0 for a in attempts)
    assert attempts[0]["error"] == "HTTP 500"


async def test_a_delivery_written_before_a_crash_is_sent_after_restart(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}))
    await drive_once(store, hook_settings)  # the state change commits; nobody delivers
    assert receiver.attempts == []
    pending = await Outbox(store.backend).webhook_deliveries(view.record.id)
    assert [d["status"] for d in pending] == ["pending"]
    async with running_worker(store, hook_settings):  # "the restarted worker"
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.requires_action")), bool)
    assert len(receiver.of_type("run.requires_action")) == 1


async def test_failing_receiver_gives_up_after_the_attempt_budget(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    receiver.fail_next = 100
    settings = hook_settings.model_copy(update={"webhook_max_age_seconds": 10**9})
    service = RunService(store, settings)
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}))
    await drive_once(store, settings)
    clock = FakeClock()
    sender = WebhookSender(store, settings, "w", SECRET, clock=clock)
    try:
        for _ in range(10):
            await sender.deliver_due()
            clock.advance(timedelta(hours=2))
    finally:
        await sender.aclose()
    deliveries = await Outbox(store.backend).webhook_deliveries(view.record.id)
    assert deliveries[0]["status"] == "failed" and deliveries[0]["attempts"] == 5


async def test_redirects_are_not_followed(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    moved = receiver.url.replace("/hook", "/moved")
    view, _ = await service.create_run(run_body(webhook={"url": moved}))
    await drive_once(store, hook_settings)
    sender = WebhookSender(store, hook_settings, "w", SECRET, clock=SYSTEM_CLOCK)
    try:
        await sender.deliver_due()
    finally:
        await sender.aclose()
    delivery = (await Outbox(store.backend).webhook_deliveries(view.record.id))[0]
    assert delivery["last_status"] == 302 and delivery["status"] == "pending"
    assert "redirects are not followed" in delivery["last_error"]
    assert receiver.delivered == []


async def test_private_destinations_are_refused_at_delivery_too(
    store: RunStore, database_url: str, receiver: Receiver
) -> None:
    """A run created while private destinations were allowed, delivered by a worker that
    no longer allows them: refused before any connection."""
    lenient = make_settings(database_url, webhook_secret=SECRET, webhook_allow_private=True)
    view, _ = await RunService(store, lenient).create_run(run_body(webhook={"url": receiver.url}))
    strict = make_settings(database_url, webhook_secret=SECRET, webhook_allow_private=False)
    await drive_once(store, strict)
    sender = WebhookSender(store, strict, "w", SECRET, clock=SYSTEM_CLOCK)
    try:
        await sender.deliver_due()
    finally:
        await sender.aclose()
    delivery = (await Outbox(store.backend).webhook_deliveries(view.record.id))[0]
    assert "refused destination" in delivery["last_error"]
    assert "127.0.0.1 is not a global address" in delivery["last_error"]
    assert receiver.attempts == [], "the loopback receiver must not have been called"


async def test_private_destinations_are_refused_when_the_run_is_created(
    store: RunStore, database_url: str
) -> None:
    strict = make_settings(database_url, webhook_secret=SECRET, webhook_allow_private=False)
    service = RunService(store, strict)
    for url in ("http://127.0.0.1:9/x", "http://2130706433/x", "http://[::ffff:100.64.0.1]/x"):
        with pytest.raises(InvalidRequest, match=r"webhook\.url"):
            await service.create_run(run_body(webhook={"url": url}))
    assert await store.list_runs(status=None, before=None, limit=10, scope=Scope.ALL) == []


async def test_a_delivery_connects_to_the_address_that_was_checked(
    store: RunStore, database_url: str, receiver: Receiver
) -> None:
    """The name is resolved once, by the guard, and the request goes to that address with
    the name in `Host`: `receiver.test` resolves nowhere else (no second resolution)."""
    port = int(receiver.url.split(":")[2].split("/")[0])
    asked: list[tuple[str, int]] = []

    async def stub(host: str, port: int) -> list[str]:
        asked.append((host, port))
        return ["127.0.0.1"] if host == "receiver.test" else []

    settings = make_settings(database_url, webhook_secret=SECRET, webhook_allow_private=True)
    url = f"http://receiver.test:{port}/hook"
    resolving = RunStore(store.engine)  # (a store whose create check resolves with `stub`)
    webhooks.install(resolving, resolver=stub)
    service = RunService(resolving, settings)
    view, _ = await service.create_run(run_body(webhook={"url": url}))
    await drive_once(store, settings)
    sender = WebhookSender(store, settings, "w", SECRET, resolver=stub, clock=SYSTEM_CLOCK)
    try:
        await sender.deliver_due()
    finally:
        await sender.aclose()
    got = receiver.of_type("run.requires_action")
    assert len(got) == 1 and got[0].payload["data"]["run_id"] == view.record.id
    assert got[0].headers["host"] == f"receiver.test:{port}"
    assert asked == [("receiver.test", port), ("receiver.test", port)]  # create, delivery


async def test_global_endpoint_gets_every_run_and_runs_without_hooks_write_nothing(
    database_url: str, store: RunStore, receiver: Receiver
) -> None:
    settings = make_settings(
        database_url, webhook_secret=SECRET, webhook_allow_private=True, webhook_url=receiver.url
    )
    scoped = RunStore(store.engine, webhook_url=receiver.url)
    service = RunService(scoped, settings)
    try:
        view, _ = await service.create_run(run_body())
        await service.cancel(view.record.id, scope=Scope.ALL)
        assert [
            d["event_type"] for d in await Outbox(scoped.backend).webhook_deliveries(view.record.id)
        ] == ["run.cancelled"]
    finally:
        await scoped.aclose()
    plain = RunService(store, make_settings(database_url))
    other, _ = await plain.create_run(run_body())
    await plain.cancel(other.record.id, scope=Scope.ALL)
    assert await Outbox(store.backend).webhook_deliveries(other.record.id) == []


async def test_an_executor_driven_only_by_webhooks_completes_100_runs(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    loop = asyncio.get_running_loop()
    answered: set[str] = set()

    def on_event(payload: dict[str, object]) -> None:
        if payload["type"] != "run.requires_action":
            return
        data = payload["data"]
        assert isinstance(data, dict)
        answered.add(str(data["run_id"]))
        results = [
            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
            for c in data["tool_calls"]
        ]
        # the executor posts to the callback URL it was given, from its own thread
        posted = asyncio.run_coroutine_threadsafe(
            service.submit_tool_results(
                ToolResultsIn.model_validate({"results": results}),
                token=str(data["callback_url"]).split("/v1/callbacks/")[1].split("/")[0],
                scope=Scope.ALL,
            ),
            loop,
        )
        submits.append(posted)

    submits: list[Any] = []

    receiver.on_event = on_event
    ids = [
        (await service.create_run(run_body(webhook={"url": receiver.url})))[0].record.id
        for _ in range(100)
    ]
    async with running_worker(store, hook_settings, concurrency=8):
        try:
            await wait_for(
                lambda: asyncio.sleep(0, len(receiver.of_type("run.completed"))),
                lambda n: n == 100,
                timeout=120,
            )
        except TimeoutError:  # (say what was missing: a submit that failed, or an event)
            failed = [repr(f.exception()) for f in submits if f.done() and f.exception()]
            raise AssertionError(
                f"{len(receiver.of_type('run.completed'))} of 100 completed; "
                f"{len(answered)} asked for action, {len(submits)} submitted, "
                f"{sum(not f.done() for f in submits)} pending, failed: {failed[:5]}"
            ) from None
    assert answered == set(ids)
    completed = {r.payload["data"]["run_id"] for r in receiver.of_type("run.completed")}
    assert completed == set(ids)


async def test_usage_totals_equal_provider_reported_usage_including_a_retried_call(
    store: RunStore, database_url: str
) -> None:
    settings = make_settings(database_url, prices={"scripted:demo": {"input": 1.0, "output": 2.0}})
    service = RunService(store, settings)
    start = datetime.now(UTC) - timedelta(seconds=1)
    script = [
        {
            "tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}],
            "usage": {"input_tokens": 100, "output_tokens": 10},
        },
        {"text": "3", "usage": {"input_tokens": 200, "output_tokens": 20}},
    ]
    model = {"provider": "scripted", "name": "demo", "script": script, "fail_times": 1}
    view, _ = await service.create_run(run_body(model=model))
    async with running_worker(store, settings):
        suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
        await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    totals = await store.usage_totals(
        start, datetime.now(UTC) + timedelta(seconds=1), scope=Scope.ALL
    )
    assert totals["calls"] == 4 and totals["failed_calls"] == 2  # each call failed once first
    assert totals["input_tokens"] == 300 and totals["output_tokens"] == 30
    assert done.record.usage is not None and done.record.usage["input_tokens"] == 300
    assert totals["cost_usd"] == pytest.approx((300 * 1.0 + 30 * 2.0) / 1_000_000)
    assert totals["by_status"]["completed"]["input_tokens"] == 300
    assert totals["by_model"]["scripted:demo"]["calls"] == 4


async def test_usage_endpoint_and_metrics(store: RunStore, database_url: str) -> None:
    from app.main import create_app

    settings = make_settings(database_url, api_keys="k")
    service = RunService(store, settings)
    calls = counted("agentrun_model_calls_total", provider="scripted", outcome="ok")
    claims = counted("agentrun_claim_latency_seconds_count")
    await service.create_run(run_body())
    await drive_once(store, settings)
    app = create_app(settings)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://t",
            headers={"Authorization": "Bearer k"},
        ) as client,
    ):
        usage = (await client.get("/v1/usage")).json()
        assert usage["calls"] == 1 and usage["input_tokens"] == 10
        assert usage["by_status"]["requires_action"]["calls"] == 1
        bad = await client.get(
            "/v1/usage", params={"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}
        )
        assert bad.status_code == 422
        naive = await client.get("/v1/usage", params={"from": "2026-01-01T00:00:00"})
        assert naive.status_code == 422
        text = (await client.get("/metrics")).text
    assert 'agentrun_runs{status="requires_action"} 1.0' in text
    assert "agentrun_suspended_run_age_seconds_count 1.0" in text
    ok = sample(text, "agentrun_model_calls_total", provider="scripted", outcome="ok")
    assert ok == calls + 1  # kept by this process (the test's worker), not read from the db
    assert sample(text, "agentrun_claim_latency_seconds_count") == claims + 1
    assert "agentrun_queue_depth 0.0" in text


async def test_the_payload_names_the_runs_status_whatever_the_event_data_holds(
    store: RunStore, database_url: str, receiver: Receiver
) -> None:
    """A failed model call's error carries its HTTP `status`; the payload's `status` is the
    run's all the same (the error is in `GET /v1/runs/{id}`)."""
    settings = make_settings(
        database_url, webhook_secret=SECRET, webhook_allow_private=True, provider_max_attempts=1
    )
    service = RunService(store, settings)
    model = {"provider": "scripted", "name": "demo", "fail_times": 1}
    view, _ = await service.create_run(run_body(webhook={"url": receiver.url}, model=model))
    async with running_worker(store, settings):
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.failed")), bool)
    data = receiver.of_type("run.failed")[0].payload["data"]
    assert data["run_id"] == view.record.id and data["status"] == "failed"
    assert data["type"] == "provider_error" and data["message"] == "scripted failure"
