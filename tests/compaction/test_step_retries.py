"""A summarising call that fails (`app.compaction.step`, through the worker's boundary
calls): a retryable failure backs the run off as its turn's call would (durably: queued,
due later, the waiting reason and the `model.failed` naming the compaction), the next
claim compacts, and the run ends as it would have; an error not worth retrying, or one
past the backoff budget, leaves the run to go on uncompacted, visibly. Time is a
`FakeClock` the service, the driver and the claims share: a backoff is waited out by
moving it, never by sleeping."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from app.clock import FakeClock
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService, RunView
from app.settings import Settings
from app.store.runs import RunStore
from app.worker.driver import RunDriver
from tests.compaction.support import Model, claim, driver, run_body, step, summaries
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer

TURNS = 8
OUTPUT = "I read every page: 0 errors."


class FailingSummaries(Model):
    """The model, but its summarising calls fail: with `faults` first, one a call, then
    with `always` (None: they answer)."""

    def __init__(self, faults: list[Reply], always: Reply | None = None) -> None:
        super().__init__(turns=TURNS)
        self.faults = list(faults)
        self.always = always
        self.failed = 0

    def __call__(self, body: Any) -> Reply:
        if "tools" not in body:
            with self.lock:
                fault = self.faults.pop(0) if self.faults else self.always
                if fault is not None:
                    self.failed += 1
                    return fault
        return super().__call__(body)


class Clocked:
    """A run driven by one claim at a time at the fake clock's time."""

    def __init__(self, service: RunService, run_driver: RunDriver, clock: FakeClock) -> None:
        self.service = service
        self.driver = run_driver
        self.clock = clock

    async def step(self, run_id: str) -> RunStatus:
        return await step(self.service, self.driver, run_id, now=self.clock.now())

    async def view(self, run_id: str) -> RunView:
        return await self.service.get_run(run_id, scope=Scope.ALL)

    async def wait_out(self, run_id: str) -> dict[str, Any]:
        """The run's backoff (its waiting reason): not due before it is over, then the
        clock moved to its end."""
        record = (await self.view(run_id)).record
        reason = record.waiting_reason
        assert record.status is RunStatus.QUEUED
        assert reason is not None and reason["type"] == "backoff", reason
        assert record.available_at > self.clock.now()
        assert await claim(self.service, now=self.clock.now()) is None  # (not due yet)
        self.clock.advance(record.available_at - self.clock.now())
        return reason

    async def to_end(self, run_id: str) -> list[dict[str, Any]]:
        """Drive the run to its end, each backoff waited out (and each deferral: a 429
        slows the model's keys, `app.limits`); the backoffs' reasons."""
        backoffs = []
        for _ in range(200):
            status = await self.step(run_id)
            if status is RunStatus.COMPLETED:
                return backoffs
            assert status is not RunStatus.FAILED, (await self.view(run_id)).record.error
            record = (await self.view(run_id)).record
            reason = record.waiting_reason
            if reason is not None and reason["type"] == "backoff":
                backoffs.append(await self.wait_out(run_id))
            elif status is RunStatus.QUEUED and record.available_at > self.clock.now():
                assert reason is not None and reason["type"] == "rate_limit", reason
                self.clock.advance(record.available_at - self.clock.now())
        raise AssertionError("the run did not end")


async def clocked(
    store: RunStore, settings: Settings, mock: MockProviderServer, **overrides: Any
) -> Clocked:
    clock = FakeClock()
    service = RunService(store, settings.model_copy(update=overrides), clock)
    return Clocked(service, await driver(service, mock, clock), clock)


def failed_summaries(events: list[Any]) -> list[dict[str, Any]]:
    return [e.data for e in events if e.type == E.MODEL_FAILED]


@pytest.mark.parametrize(
    "fault",
    [Reply.fault(500, "the summariser broke"), Reply.fault(429, "slow down", retry_after="7")],
    ids=["500", "429"],
)
async def test_a_summary_that_fails_once_backs_off_then_compacts_as_without_the_failure(
    store: RunStore, settings: Settings, mock: MockProviderServer, fault: Reply
) -> None:
    # (a backoff of a second or more: "not due yet" is not a race with the claim)
    run = await clocked(store, settings, mock, provider_backoff_base_seconds=2.0)
    mock.responder = Model(turns=TURNS)
    plain, _ = await run.service.create_run(run_body(TURNS, 1000, keep_recent_turns=1))
    assert await run.to_end(plain.record.id) == []
    expected = await run.view(plain.record.id)
    turns_asked = [r.body for r in mock.requests if "tools" in r.body]
    summaries_asked = summaries(mock)
    assert summaries_asked  # (it did compact)

    mock.reset()
    model = FailingSummaries([fault])
    mock.responder = model
    view, _ = await run.service.create_run(run_body(TURNS, 1000, keep_recent_turns=1))
    run_id = view.record.id
    status = RunStatus.REQUIRES_ACTION
    while status is RunStatus.REQUIRES_ACTION:  # (tool rounds, until the summary is asked)
        status = await run.step(run_id)
    assert model.failed == 1 and model.summaries == 0
    failing_claim = [r.body for r in mock.requests]
    assert "tools" not in failing_claim[-1]  # (the turn's call was not made after it)

    # Backed off as a turn's call would be: queued, due later, saying it was the summary.
    record = (await run.view(run_id)).record
    assert record.model_attempts == 1
    events = await store.events(run_id, limit=10_000)
    assert events[-1].type == E.MODEL_FAILED
    failed = events[-1].data
    assert (failed["purpose"], failed["status"], failed["attempt"]) == (
        "compaction",
        fault.status,
        1,
    )
    assert failed["retryable"] is True and "retries_exhausted" not in failed
    reason = await run.wait_out(run_id)
    assert (reason["attempt"], reason["status"]) == (1, fault.status)
    assert reason["error"]["purpose"] == "compaction"
    if fault.status == 429:  # (the provider's Retry-After is the wait)
        assert (reason["reason"], reason["delay_seconds"]) == ("retry_after", 7.0)
    else:
        assert reason["reason"] == "backoff" and 1.0 <= reason["delay_seconds"] < 2.0

    # The next claim compacts (its own write), the attempts over; the run ends as before.
    assert await run.step(run_id) is RunStatus.QUEUED
    events = await store.events(run_id, limit=10_000)
    assert [e.type for e in events[-2:]] == [E.MODEL_CALLED, E.RUN_COMPACTED]
    assert events[-2].data["purpose"] == "compaction"
    assert (await run.view(run_id)).record.model_attempts == 0
    assert await run.to_end(run_id) == []
    done = (await run.view(run_id)).record
    assert done.output == expected.record.output == OUTPUT
    assert [r.body for r in mock.requests if "tools" in r.body] == turns_asked
    assert summaries(mock) == [summaries_asked[0], *summaries_asked]  # (the failed one: again)
    # Only the answered calls are billed: the usage is the run's without the failure.
    assert done.usage == expected.record.usage
    events = await store.events(run_id, limit=10_000)
    assert done.usage is not None
    assert done.usage["model_calls"] == sum(1 for e in events if e.type == E.MODEL_CALLED)
    compactions = [e.data for e in events if e.type == E.RUN_COMPACTED]
    assert len(compactions) == len(summaries_asked)


async def test_a_summary_refused_for_good_is_not_retried_and_the_run_goes_on_uncompacted(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    run = await clocked(store, settings, mock)
    model = FailingSummaries([], always=Reply.fault(400, "the summary request is refused"))
    mock.responder = model
    view, _ = await run.service.create_run(run_body(TURNS, 1000, keep_recent_turns=1))
    with structlog.testing.capture_logs() as logs:
        backoffs = await run.to_end(view.record.id)
    assert backoffs == []  # (no backoff: the turn's call went on in the same claim)
    done = (await run.view(view.record.id)).record
    assert done.output == OUTPUT and model.calls == TURNS
    events = await store.events(view.record.id, limit=10_000)
    assert E.RUN_COMPACTED not in [e.type for e in events]
    failed = failed_summaries(events)
    assert model.failed >= 2 and len(failed) == model.failed  # (each boundary tried again)
    for data in failed:
        assert (data["purpose"], data["status"], data["retryable"]) == ("compaction", 400, False)
        assert "retries_exhausted" not in data
    logged = [e for e in logs if e["event"] == "boundary_call.failed"]
    assert len(logged) == model.failed
    assert all(e["purpose"] == "compaction" and e["status"] == 400 for e in logged)
    assert not any(e["retries_exhausted"] for e in logged)


@pytest.mark.parametrize(
    ("budget", "fault"),
    [
        ({"provider_max_attempts": 2}, Reply.fault(503, "overloaded")),
        ({"provider_max_backoff_seconds": 30.0}, Reply.fault(429, "slow", retry_after="20")),
    ],
    ids=["attempts", "seconds"],
)
async def test_past_the_backoff_budget_the_run_goes_on_uncompacted(
    store: RunStore,
    settings: Settings,
    mock: MockProviderServer,
    budget: dict[str, Any],
    fault: Reply,
) -> None:
    """Every summary fails retryably: at each boundary past the threshold the run backs
    off once, then its budget is spent (its second attempt; 20 s waited, and 20 more
    would pass 30) and the turn's call goes on; the run completes, never compacted."""
    run = await clocked(store, settings, mock, **budget)
    model = FailingSummaries([], always=fault)
    mock.responder = model
    view, _ = await run.service.create_run(run_body(TURNS, 1000, keep_recent_turns=1))
    with structlog.testing.capture_logs() as logs:
        backoffs = await run.to_end(view.record.id)
    done = (await run.view(view.record.id)).record
    assert done.output == OUTPUT and model.calls == TURNS
    events = await store.events(view.record.id, limit=10_000)
    assert E.RUN_COMPACTED not in [e.type for e in events]
    failed = failed_summaries(events)
    assert len(failed) == model.failed == 2 * len(backoffs) >= 4
    assert all(b["attempt"] == 1 and b["error"]["purpose"] == "compaction" for b in backoffs)
    for first, second in zip(failed[::2], failed[1::2], strict=True):
        assert first["attempt"] == 1 and "retries_exhausted" not in first
        assert second["attempt"] == 2 and second["retries_exhausted"] is True
        assert first["purpose"] == second["purpose"] == "compaction"
    logged = [e for e in logs if e["event"] == "boundary_call.failed"]
    assert len(logged) == len(backoffs)
    assert all(e["purpose"] == "compaction" and e["retries_exhausted"] for e in logged)


class EverythingFails(FailingSummaries):
    """Summaries always fail with `fault`; the turn's calls too, after `answered` turns."""

    def __init__(self, fault: Reply, answered: int) -> None:
        super().__init__([], always=fault)
        self.fault = fault
        self.answered = answered
        self.turn_failures = 0

    def __call__(self, body: Any) -> Reply:
        if "tools" in body:
            with self.lock:
                if self.calls >= self.answered:
                    self.turn_failures += 1
                    return self.fault
        return super().__call__(body)


async def test_a_run_whose_summary_and_turn_both_keep_failing_fails_within_its_budget(
    store: RunStore, settings: Settings, mock: MockProviderServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary gives up (its budget spent); the turn's call then gets its own attempts
    and fails the run when they are spent. The give-up is found however many events the
    turn's retries wrote since (read a page at a time: a page of 3 here, so that the
    turn's 8 attempts write far more): before, a give-up that fell out of the latest page
    let the summary be asked again, its give-up resetting the turn's attempts, forever."""
    from app.worker import boundaries

    monkeypatch.setattr(boundaries, "GIVEN_UP_WINDOW", 3)
    run = await clocked(store, settings, mock, provider_max_attempts=8)
    model = EverythingFails(Reply.fault(503, "down"), answered=6)
    mock.responder = model
    view, _ = await run.service.create_run(run_body(TURNS, 1000, keep_recent_turns=1))
    run_id = view.record.id
    for _ in range(100):
        status = await run.step(run_id)
        if status is RunStatus.FAILED:
            break
        record = (await run.view(run_id)).record
        if status is RunStatus.QUEUED and record.available_at > run.clock.now():
            run.clock.advance(record.available_at - run.clock.now())
    else:
        raise AssertionError("the run neither failed nor completed")
    events = await store.events(run_id, limit=10_000)
    failed = [e.data for e in events if e.type == E.MODEL_FAILED]
    at_the_end = [d for d in failed if d["turn"] == max(f["turn"] for f in failed)]
    summaries_failed = [d["attempt"] for d in at_the_end if d.get("purpose") == "compaction"]
    turn_failed = [d["attempt"] for d in at_the_end if "purpose" not in d]
    assert summaries_failed == list(range(1, 9))  # (its budget, once)
    assert turn_failed == list(range(1, 9))  # (then the turn's own, once)
    assert (await run.view(run_id)).record.error["type"] == "provider_error"  # type: ignore[index]
