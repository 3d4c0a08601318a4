"""The tool-call queue's service on both back ends: leases answered through the normal
submission path (the run resumes and completes as with any results), fencing by the
lease's token, re-offer after a lapse, and long polls woken by new calls (NOTIFY on
PostgreSQL, the poll on SQLite) or by a lapse, holding nothing while they wait."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from app.clock import SYSTEM_CLOCK, SystemClock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.errors import (
    LeaseLost,
    LeaseNotFound,
    RunStateConflict,
    ToolResultConflict,
)
from app.service.live import EventHub
from app.service.principals import DEFAULT_TENANT
from app.service.runs import RunService
from app.service.schemas import HeartbeatIn, LeasedResultIn, LeaseIn
from app.settings import Settings
from app.store.backend.leases import bell_of
from app.store.run_records import ToolCallRecord
from app.store.runs import RunStore
from app.toolqueue.service import Lease, QueueService
from tests.helpers import cancel_inside, drive_once, run_body, suspended_run, wait_for


class Clock(SystemClock):
    """Now, or later: `advance` moves the wall time on (waits keep the machine's clock)."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def now(self) -> datetime:
        return super().now() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def service(store: RunStore, settings: Settings, clock: Clock) -> RunService:
    return RunService(store, settings, clock=clock)


@pytest.fixture
async def hub(store: RunStore, settings: Settings) -> AsyncIterator[EventHub]:
    hub = EventHub(store, settings.database_url, settings.poll_interval, clock=SYSTEM_CLOCK)
    yield hub
    await hub.close()


@pytest.fixture
def queues(service: RunService, hub: EventHub) -> QueueService:
    # A fallback poll longer than any test: on PostgreSQL only a NOTIFY (or a lease's
    # lapse) wakes a waiting lease; SQLite polls every `poll_interval`.
    return QueueService(service, hub, fallback_seconds=600 if service.store.notifies else None)


def lease_in(**kw: object) -> LeaseIn:
    return LeaseIn.model_validate({"executor": "ex-1", "limit": 10, "wait": 0, **kw})


def result(output: object, is_error: bool = False) -> LeasedResultIn:
    return LeasedResultIn.model_validate({"output": output, "is_error": is_error})


async def listening(queues: QueueService, n: int) -> None:
    """Until `n` lease requests wait on queue `q` (of the default tenant)."""
    bell = bell_of(DEFAULT_TENANT, "q")
    await wait_for(lambda: asyncio.sleep(0, queues.bell.waiting(bell)), lambda got: got >= n)


async def test_leased_calls_answered_through_their_leases_resume_the_run(
    queues: QueueService, service: RunService
) -> None:
    view = await suspended_run(service, tool_queue="math")
    calls = await queues.lease("math", lease_in(), "key")
    assert [c.call_id for c in calls] == [c.call_id for c in view.pending]
    first = await queues.submit("math", queues.token(calls[0]), result("3"), "key")
    assert first.accepted == [calls[0].call_id] and not first.resumed
    assert first.record.status == RunStatus.REQUIRES_ACTION
    again = await queues.submit("math", queues.token(calls[0]), result("3"), "key")
    assert again.accepted == [] and not again.resumed, "the same answer again is a no-op"
    with pytest.raises(ToolResultConflict):
        await queues.submit("math", queues.token(calls[0]), result("4"), "key")
    last = await queues.submit("math", queues.token(calls[1]), result("7"), "key")
    assert last.resumed and last.record.status == RunStatus.QUEUED
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    done = await service.get_run(view.record.id, scope=Scope.ALL)
    assert done.record.output == "the sums are 3 and 7"
    types = [e.type for e in await service.events(view.record.id, scope=Scope.ALL)]
    assert types.count("tool_call.leased") == 2 and types.count("tool_result.received") == 2
    assert types.index("tool_call.leased") < types.index("tool_result.received")


async def test_a_lapsed_lease_is_offered_again_and_the_old_holder_is_fenced_off(
    queues: QueueService, service: RunService, clock: Clock
) -> None:
    view = await suspended_run(service, tool_queue="q")
    (a,) = await queues.lease("q", lease_in(limit=1, lease_seconds=5), "key")
    assert await queues.lease("q", lease_in(limit=1, executor="ex-2"), "key") != []  # the other
    assert await queues.lease("q", lease_in(executor="ex-2"), "key") == []  # both held
    until = await queues.heartbeat("q", queues.token(a), HeartbeatIn(lease_seconds=10))
    assert until > clock.now() + timedelta(seconds=9)
    clock.advance(11)  # a's executor died: its lease lapsed
    (b,) = await queues.lease("q", lease_in(executor="ex-2"), "key")
    assert (b.call_id, b.attempts, b.lease_owner) == (a.call_id, 2, "ex-2")
    with pytest.raises(LeaseLost, match="leased again"):
        await queues.heartbeat("q", queues.token(a), HeartbeatIn())
    with pytest.raises(LeaseLost):
        await queues.submit("q", queues.token(a), result("3"), "key")
    accepted = await queues.submit("q", queues.token(b), result("3"), "key")
    assert accepted.accepted == [a.call_id]
    late = await queues.submit("q", queues.token(a), result("3"), "key")
    assert late.accepted == [], "a late identical answer is a no-op"
    with pytest.raises(ToolResultConflict):
        await queues.submit("q", queues.token(a), result("other"), "key")
    with pytest.raises(LeaseLost, match="answered"):
        await queues.heartbeat("q", queues.token(b), HeartbeatIn())
    events = await service.events(view.record.id, scope=Scope.ALL)
    assert [e.data["attempt"] for e in events if e.type == "tool_call.lease_expired"] == [1]


async def test_a_lease_that_lapsed_unnoticed_still_answers(
    queues: QueueService, service: RunService, clock: Clock
) -> None:
    """Only another lease fences a holder off: a slow executor whose lease lapsed while
    nobody took the call may still extend it and answer."""
    await suspended_run(service, tool_queue="q")
    (a, _) = await queues.lease("q", lease_in(lease_seconds=1), "key")
    clock.advance(5)
    await queues.heartbeat("q", queues.token(a), HeartbeatIn())
    assert (await queues.submit("q", queues.token(a), result(1), "key")).accepted == [a.call_id]


async def test_leases_of_runs_that_stopped_waiting_and_bad_tokens_are_refused(
    queues: QueueService, service: RunService
) -> None:
    view = await suspended_run(service, tool_queue="q")
    (a, _) = await queues.lease("q", lease_in(), "key")
    with pytest.raises(LeaseNotFound):
        await queues.submit("other", queues.token(a), result(1), "key")
    with pytest.raises(LeaseNotFound):
        await queues.heartbeat("other", queues.token(a), HeartbeatIn())
    with pytest.raises(LeaseNotFound):
        await queues.submit("q", "not-a-token", result(1), "key")
    with pytest.raises(LeaseNotFound):
        await queues.submit("q", f"run_missing-1-0-{'0' * 32}", result(1), "key")
    await service.cancel(view.record.id, scope=Scope.ALL)
    with pytest.raises(RunStateConflict) as refused:
        await queues.submit("q", queues.token(a), result(1), "key")
    assert refused.value.current == RunStatus.CANCELLED.value
    with pytest.raises(LeaseLost, match="stopped waiting"):
        await queues.heartbeat("q", queues.token(a), HeartbeatIn())


async def test_a_token_never_issued_is_not_found_while_one_issued_and_lost_is_lost(
    queues: QueueService, service: RunService, clock: Clock
) -> None:
    """docs/queue.md: 404 `lease-not-found` for a token this queue never issued, 409
    `tool-call-lease-lost` for a lease that moved on. Both name a real call."""
    await suspended_run(service, tool_queue="q")
    (a, _) = await queues.lease("q", lease_in(lease_seconds=1), "key")
    clock.advance(5)
    b = next(
        c
        for c in await queues.lease("q", lease_in(executor="ex-2"), "key")
        if c.call_id == a.call_id
    )
    lost, current = queues.token(a), Lease.parse(queues.token(b))
    made_up = [
        f"{a.run_id}-{a.round}-{a.position}-{'0' * 32}",  # the documented shape, unsigned
        f"{a.run_id}-{a.round}-{a.position}-{'0' * 32}-{'0' * 32}",  # signed by nobody
        dataclasses.replace(current, nonce="f" * 32).token,  # a signature re-used
        lost[:-1] + ("0" if lost[-1] != "0" else "1"),  # a lost token, altered
    ]
    for token in made_up:
        with pytest.raises(LeaseNotFound):
            await queues.heartbeat("q", token, HeartbeatIn())
        with pytest.raises(LeaseNotFound):
            await queues.submit("q", token, result(1), "key")
    with pytest.raises(LeaseLost, match="leased again"):
        await queues.heartbeat("q", lost, HeartbeatIn())
    with pytest.raises(LeaseLost):
        await queues.submit("q", lost, result(1), "key")


async def test_a_token_of_an_earlier_release_is_good_while_it_holds_the_call(
    queues: QueueService, service: RunService
) -> None:
    """Tokens handed out before leases were signed (no signature part) keep working
    across an upgrade while their lease is the call's current one."""
    await suspended_run(service, tool_queue="q")
    (a, _) = await queues.lease("q", lease_in(), "key")
    unsigned = dataclasses.replace(Lease.parse(queues.token(a)), signature=None).token
    await queues.heartbeat("q", unsigned, HeartbeatIn())
    assert (await queues.submit("q", unsigned, result(1), "key")).accepted == [a.call_id]


async def test_a_waiting_lease_wakes_when_a_run_offers_calls(
    queues: QueueService, service: RunService
) -> None:
    waiting = asyncio.ensure_future(queues.lease("q", lease_in(wait=30), "key"))
    await listening(queues, 1)
    assert not waiting.done()
    started = time.monotonic()
    view = await suspended_run(service, tool_queue="q")
    calls = await asyncio.wait_for(waiting, 10)
    assert [c.run_id for c in calls] == [view.record.id] * 2
    assert time.monotonic() - started < 5


async def test_a_waiting_lease_wakes_when_a_lease_lapses(
    queues: QueueService, service: RunService
) -> None:
    await suspended_run(service, tool_queue="q")
    started = time.monotonic()  # (before the first lease: its 1 s runs from its grant)
    await queues.lease("q", lease_in(lease_seconds=1), "key")
    calls = await queues.lease("q", lease_in(wait=20, executor="ex-2"), "key")
    assert len(calls) == 2 and {c.attempts for c in calls} == {2}
    assert 0.5 < time.monotonic() - started < 5


async def test_a_wait_that_nothing_answers_times_out_empty(queues: QueueService) -> None:
    started = time.monotonic()
    assert await queues.lease("q", lease_in(wait=0.3), "key") == []
    assert 0.25 < time.monotonic() - started < 3


async def test_many_waiting_leases_share_the_calls_without_duplicates(
    queues: QueueService, service: RunService
) -> None:
    waits = [
        asyncio.ensure_future(queues.lease("q", lease_in(limit=1, wait=10, executor=f"e{i}"), "k"))
        for i in range(6)
    ]
    await listening(queues, 6)
    for _ in range(2):
        await suspended_run(service, tool_queue="q")
    got: list[ToolCallRecord] = []
    deadline = time.monotonic() + 10
    while len(got) < 4 and time.monotonic() < deadline:
        done, _ = await asyncio.wait(waits, timeout=0.1)
        got = [c for w in done for c in w.result()]
    for w in waits:
        w.cancel()
    # (Their cancellation ends before the fixtures close the store: a lease cancelled
    # inside an aiosqlite call once held the loop's shutdown for good.)
    await asyncio.gather(*waits, return_exceptions=True)
    assert len({(c.run_id, c.position) for c in got}) == len(got) == 4


async def test_release_ends_waiting_leases(queues: QueueService, hub: EventHub) -> None:
    waiting = asyncio.ensure_future(queues.lease("q", lease_in(wait=30), "key"))
    await listening(queues, 1)
    hub.release()
    assert await asyncio.wait_for(waiting, 5) == []


async def test_a_run_of_another_queue_or_none_is_not_leased(
    queues: QueueService, service: RunService
) -> None:
    await suspended_run(service, tool_queue="other")
    await service.create_run(run_body())
    await drive_once(service.store, service.settings)
    assert await queues.lease("q", lease_in(), "key") == []


async def test_an_expired_run_retried_by_an_operator_offers_its_calls_again(
    queues: QueueService, service: RunService
) -> None:
    from app.service.operator_actions import retry_run
    from app.store import changes

    view = await suspended_run(service, tool_queue="q")
    (a, _) = await queues.lease("q", lease_in(), "key")
    await queues.submit("q", queues.token(a), result(3), "key")  # one answered, one still open
    done, _ = await service.store.apply(
        view.record.id, changes.expire(), service.clock.now(), scope=Scope.ALL
    )
    assert done is not None and done.status == RunStatus.EXPIRED
    assert await queues.lease("q", lease_in(), "key") == []
    await retry_run(service, view.record.id, "operator", scope=Scope.ALL)
    assert await drive_once(service.store, service.settings) == RunStatus.REQUIRES_ACTION
    again = await queues.lease("q", lease_in(), "key")
    expected = [(a.call_id, 1), (view.pending[1].call_id, 1)]
    assert [(c.call_id, c.attempts) for c in again] == expected, "all open again, attempts anew"
    for call, output in zip(again, (3, 7), strict=True):
        await queues.submit("q", queues.token(call), result(output), "key")
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED


async def test_a_lease_cancelled_inside_its_store_call_lets_the_call_finish(
    queues: QueueService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long poll is cancelled when its client goes away; its store call, perhaps inside
    a transaction, is not cut off (on SQLite that could leave the write lock held): the
    caller is cancelled at once, the call completes."""
    polling = queues.lease("q", lease_in(wait=5), "key")
    assert await cancel_inside(queues.calls, "lease_calls", polling, monkeypatch) == [[]]
