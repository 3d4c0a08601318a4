"""A turn-boundary hook's model call that fails (`app.worker.boundaries`, against the mock
provider): retryable within the run's backoff budget, the run backs off as after its
turn's own call (queued, due later, the waiting reason naming the hook's `purpose`) and
the hook is asked again at the next claim; not retryable, or past the budget, the hook
goes on without the answer, is not asked to call again at that boundary, and the turn's
call counts its own attempts. The hook here is a probe of no feature's: the worker knows
none. Time is a `FakeClock` the service, the driver and the claims share."""

from __future__ import annotations

import random
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import structlog

from app.clock import FakeClock
from app.core import UserMessage
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.providers.base import ModelRequest, Provider, ProviderTurn
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.service.tokens import new_key
from app.settings import Settings
from app.store.hooks import Boundary, Rewrite
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from app.worker.providers import make_provider
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer
from tests.worker.test_model_params import wire_settings

PROBE = {"provider": "openai", "name": "probe-model"}
PURPOSE = "probe"


class Probe:
    """A hook that asks `probe-model` at each turn boundary until it has an answer."""

    def __init__(self) -> None:
        self.answers: list[ProviderTurn] = []

    async def __call__(self, boundary: Boundary) -> Rewrite | None:
        if self.answers:
            return None
        request = ModelRequest(
            model="probe-model", prompt=UserMessage("probe?"), turn=boundary.step.turn
        )
        answer = await boundary.calls.call(PROBE, request, PURPOSE)
        if answer is not None:
            self.answers.append(answer)
        return None


class Replies:
    """The mock's responder: the probe's and the turn's scripted replies, in order (then
    an answer each)."""

    def __init__(self, probe: list[Reply], turn: list[Reply] | None = None) -> None:
        self.probe = probe
        self.turn = turn or []
        self.asked = {"probe": 0, "turn": 0}

    def __call__(self, body: Mapping[str, Any]) -> Reply:
        kind = "probe" if body["model"] == "probe-model" else "turn"
        self.asked[kind] += 1
        script = self.probe if kind == "probe" else self.turn
        return script.pop(0) if script else Reply(text=f"{kind} answered")


class Harness:
    def __init__(self, service: RunService, driver: RunDriver, clock: FakeClock) -> None:
        self.service = service
        self.driver = driver
        self.clock = clock

    async def start(self) -> str:
        body = {"prompt": "hi", "model": {"provider": "openai", "name": "m"}}
        view, _ = await self.service.create_run(RunCreate.model_validate(body))
        return view.record.id

    async def step(self, run_id: str) -> RunStatus:
        now = self.clock.now()
        lease = now + timedelta(seconds=self.service.settings.lease_seconds)
        record = await self.service.store.claim("w", now, lease)
        assert record is not None and record.id == run_id, "the run is not due"
        status = await self.driver.drive(record)
        assert status is not None
        return status

    async def backoff(self, run_id: str) -> dict[str, Any]:
        """The run's backoff: not due before its end; the clock moved there."""
        record = (await self.service.get_run(run_id, scope=Scope.ALL)).record
        reason = record.waiting_reason
        assert record.status is RunStatus.QUEUED
        assert reason is not None and reason["type"] == "backoff", reason
        now = self.clock.now()
        assert await self.service.store.claim("w", now, now + timedelta(seconds=5)) is None
        self.clock.advance(record.available_at - now)
        return reason


async def harness(
    store: RunStore, settings: Settings, mock: MockProviderServer, **overrides: Any
) -> Harness:
    settings = wire_settings(settings, mock).model_copy(update=overrides)
    clock = FakeClock()
    store.hooks.add_turn_boundary(Probe())

    def factory(spec: Mapping[str, Any]) -> Provider:
        return make_provider(spec, settings, clock=clock)

    key = await store.secret("callback_key", new_key)
    driver = RunDriver(store, settings, "w", factory, key, rng=random.Random(5), clock=clock)
    return Harness(RunService(store, settings, clock), driver, clock)


async def test_a_retryable_failure_backs_the_run_off_and_the_hook_is_asked_again(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    run = await harness(store, settings, mock, provider_backoff_base_seconds=2.0)
    replies = Replies([Reply.fault(500, "broke"), Reply.fault(503, "busy", retry_after="9")])
    mock.responder = replies
    run_id = await run.start()

    assert await run.step(run_id) is RunStatus.QUEUED
    assert replies.asked == {"probe": 1, "turn": 0}  # (no turn's call after it)
    first = await run.backoff(run_id)
    assert (first["attempt"], first["status"], first["reason"]) == (1, 500, "backoff")
    assert first["error"]["purpose"] == PURPOSE and 1.0 <= first["delay_seconds"] < 2.0

    assert await run.step(run_id) is RunStatus.QUEUED
    second = await run.backoff(run_id)
    assert (second["attempt"], second["status"]) == (2, 503)
    assert (second["reason"], second["delay_seconds"]) == ("retry_after", 9.0)
    assert second["error"]["purpose"] == PURPOSE

    assert await run.step(run_id) is RunStatus.COMPLETED
    assert replies.asked == {"probe": 3, "turn": 1}
    done = (await run.service.get_run(run_id, scope=Scope.ALL)).record
    assert done.output == "turn answered" and done.model_attempts == 0
    events = await store.events(run_id)
    failed = [e.data for e in events if e.type == E.MODEL_FAILED]
    assert [(d["purpose"], d["attempt"], d["status"]) for d in failed] == [
        (PURPOSE, 1, 500),
        (PURPOSE, 2, 503),
    ]
    called = [e.data.get("purpose") for e in events if e.type == E.MODEL_CALLED]
    assert called == [PURPOSE, None]
    assert done.usage is not None and done.usage["model_calls"] == 2  # (the answered ones)


async def test_past_the_budget_the_hook_goes_on_and_the_turn_counts_its_own_attempts(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """Two attempts a call: the probe's second failure spends them, so the turn's call
    is made; it fails too and backs off as a first attempt (not a third: the run would
    fail), and at its retry the probe is not asked again at that boundary."""
    run = await harness(store, settings, mock, provider_max_attempts=2)
    replies = Replies([Reply.fault(503, "busy")] * 5, turn=[Reply.fault(502, "gateway")])
    mock.responder = replies
    run_id = await run.start()

    assert await run.step(run_id) is RunStatus.QUEUED
    await run.backoff(run_id)
    with structlog.testing.capture_logs() as logs:
        assert await run.step(run_id) is RunStatus.QUEUED
    assert replies.asked == {"probe": 2, "turn": 1}
    turn = await run.backoff(run_id)
    assert (turn["attempt"], turn["status"]) == (1, 502) and "purpose" not in turn["error"]
    (logged,) = [e for e in logs if e["event"] == "boundary_call.failed"]
    assert logged["purpose"] == PURPOSE and logged["retries_exhausted"] is True

    assert await run.step(run_id) is RunStatus.COMPLETED
    assert replies.asked == {"probe": 2, "turn": 2}
    events = await store.events(run_id)
    failed = [e.data for e in events if e.type == E.MODEL_FAILED]
    assert [(d.get("purpose"), d["attempt"], d.get("retries_exhausted")) for d in failed] == [
        (PURPOSE, 1, None),
        (PURPOSE, 2, True),
        (None, 1, None),
    ]


async def test_a_failure_not_worth_retrying_stops_nothing(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    run = await harness(store, settings, mock)
    replies = Replies([Reply.fault(400, "bad probe")])
    mock.responder = replies
    run_id = await run.start()
    with structlog.testing.capture_logs() as logs:
        assert await run.step(run_id) is RunStatus.COMPLETED  # (the same claim)
    assert replies.asked == {"probe": 1, "turn": 1}
    events = await store.events(run_id)
    (failed,) = [e.data for e in events if e.type == E.MODEL_FAILED]
    assert (failed["purpose"], failed["status"], failed["retryable"]) == (PURPOSE, 400, False)
    assert "retries_exhausted" not in failed
    (logged,) = [e for e in logs if e["event"] == "boundary_call.failed"]
    assert (logged["purpose"], logged["status"], logged["retries_exhausted"]) == (
        PURPOSE,
        400,
        False,
    )
