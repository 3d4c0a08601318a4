"""Ticks into runs (`app.schedules.firing`) on both back ends, the clock moved by hand:
one run per tick, overlap (skip, buffer_one, allow_all, cancel_other), catch-up (skip,
latest, all, the window), pause, trigger, backfill, bounds, jitter, a run body refused
at a tick, and two firers racing for the same due schedules."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa

from app import agents as agent_feature
from app import features
from app.agents.specs import AgentIn
from app.clock import FakeClock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.schedules import schedule_service
from app.schedules.rows import TickRecord
from app.schedules.service import ScheduleService
from app.schedules.specs import BackfillIn, PauseIn, ScheduleIn
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.store.schema import runs as runs_table

ECHO = {"provider": "scripted", "name": "echo"}
T0 = datetime(2027, 1, 4, 5, 58, tzinfo=UTC)  # a Monday
TENANT = "default"


@dataclass
class World:
    clock: FakeClock
    runs: RunService
    schedules: ScheduleService

    async def create(self, **fields: Any) -> None:
        body = {"key": "s", "cron": "*/5 * * * *", "run": {"model": ECHO, "prompt": "go"}}
        await self.schedules.create(
            ScheduleIn.model_validate({**body, **fields}), tenant=TENANT, actor="test"
        )

    async def fire_at(self, when: datetime) -> list[tuple[datetime, str]]:
        self.clock.set(when)
        fired = await self.schedules.firer.fire_due(when)
        return [(o.scheduled_time, o.outcome) for o in fired]

    async def ticks(self, key: str = "s") -> list[TickRecord]:
        found = await self.schedules.ticks(key, tenant=TENANT, limit=1000, before=None)
        return sorted(found, key=lambda t: t.scheduled_time)

    async def started(self, key: str = "s") -> list[datetime]:
        return [t.scheduled_time for t in await self.ticks(key) if t.outcome == "started"]

    async def end(self, run_id: str | None) -> None:
        assert run_id is not None
        await self.runs.cancel(run_id, actor="test", scope=Scope.of(TENANT))

    async def run_count(self) -> int:
        async with self.runs.store.engine.connect() as conn:
            return int(
                (await conn.execute(sa.select(sa.func.count()).select_from(runs_table))).scalar()
                or 0
            )


def at(hh: int, mm: int, ss: int = 0) -> datetime:
    return T0.replace(hour=hh, minute=mm, second=ss)


@pytest.fixture
async def world(store: RunStore, settings: Settings) -> World:
    clock = FakeClock(T0)
    runs = RunService(store, settings, clock)
    return World(clock, runs, schedule_service(runs))


async def test_each_tick_starts_one_run_marked_with_its_schedule(world: World) -> None:
    await world.create(overlap="allow_all")
    assert await world.fire_at(at(5, 59)) == []
    assert await world.fire_at(at(6, 0, 1)) == [(at(6, 0), "started")]
    assert await world.fire_at(at(6, 0, 2)) == []  # (nothing is due twice)
    assert await world.fire_at(at(6, 5, 0)) == [(at(6, 5), "started")]
    (record,) = [t for t in await world.ticks() if t.scheduled_time == at(6, 0)]
    view = await world.runs.get_run(record.run_id or "", scope=Scope.of(TENANT))
    assert view.record.config["schedule"]["key"] == "s"
    assert view.record.config["schedule"]["scheduled_time"] == "2027-01-04T06:00:00Z"
    schedule = await world.schedules.get("s", tenant=TENANT)
    assert schedule.next_fire_at == at(6, 10) and schedule.last_run_id is not None
    assert await world.run_count() == 2


async def test_overlap_skip_records_the_ticks_a_long_run_covers(world: World) -> None:
    await world.create(overlap="skip")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id
    assert await world.fire_at(at(6, 5)) == [(at(6, 5), "skipped")]
    assert await world.fire_at(at(6, 10)) == [(at(6, 10), "skipped")]
    skipped = [t for t in await world.ticks() if t.outcome == "skipped"]
    assert [(t.reason, t.run_id) for t in skipped] == [("overlap", first)] * 2
    await world.end(first)
    assert await world.fire_at(at(6, 15)) == [(at(6, 15), "started")]
    assert await world.started() == [at(6, 0), at(6, 15)]


async def test_buffer_one_starts_one_tick_when_the_run_ends(world: World) -> None:
    await world.create(overlap="buffer_one")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id
    assert await world.fire_at(at(6, 5)) == [(at(6, 5), "buffered")]
    assert await world.fire_at(at(6, 10)) == [(at(6, 10), "skipped")]
    assert (await world.schedules.get("s", tenant=TENANT)).buffered_time == at(6, 5)
    await world.end(first)  # (the run's end starts the buffered tick: run_ended)
    schedule = await world.schedules.get("s", tenant=TENANT)
    assert schedule.buffered_time is None and schedule.last_run_id != first
    assert await world.started() == [at(6, 0), at(6, 5)]
    (full,) = [t for t in await world.ticks() if t.outcome == "skipped"]
    assert full.reason == "buffer_full"


async def test_a_buffered_tick_left_by_a_crash_is_started_by_the_next_pass(
    world: World, store: RunStore
) -> None:
    await world.create(overlap="buffer_one")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id
    await world.fire_at(at(6, 5))
    store.hooks.run_ended = ()  # (the process died between the run's end and its hook)
    await world.end(first)
    assert (await world.schedules.get("s", tenant=TENANT)).buffered_time == at(6, 5)
    assert await world.fire_at(at(6, 6)) == [(at(6, 5), "started")]
    assert await world.started() == [at(6, 0), at(6, 5)]


async def test_cancel_other_cancels_the_running_one_with_the_services_cancel(
    world: World,
) -> None:
    await world.create(overlap="cancel_other")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id or ""
    assert await world.fire_at(at(6, 5)) == [(at(6, 5), "started")]
    old = await world.runs.get_run(first, with_log=True, scope=Scope.of(TENANT))
    assert old.record.status == RunStatus.CANCELLED
    events = await world.runs.events(first, after=0, limit=100, scope=Scope.of(TENANT))
    assert [(e.type, e.actor) for e in events if e.type == "run.cancelled"] == [
        ("run.cancelled", "schedule:s")
    ]
    assert await world.started() == [at(6, 0), at(6, 5)]


async def test_allow_all_starts_every_tick(world: World) -> None:
    await world.create(overlap="allow_all")
    for minute in (0, 5, 10):
        await world.fire_at(at(6, minute))
    assert await world.started() == [at(6, 0), at(6, 5), at(6, 10)]


@pytest.mark.parametrize(
    ("catchup", "fired"),
    [("latest", [at(6, 10)]), ("all", [at(6, 0), at(6, 5), at(6, 10)]), ("skip", [])],
)
async def test_three_missed_ticks_under_each_catchup(
    world: World, catchup: str, fired: list[datetime]
) -> None:
    await world.create(overlap="allow_all", catchup=catchup)
    # Workers stopped over 06:00, 06:05 and 06:10; back at 06:12.
    assert [t for t, _ in await world.fire_at(at(6, 12))] == fired
    assert await world.started() == fired
    missed = [t for t in await world.ticks() if t.outcome == "missed"]
    assert sum(t.count for t in missed) == 3 - len(fired)
    assert all(t.reason == "catchup" for t in missed)
    assert (await world.schedules.get("s", tenant=TENANT)).next_fire_at == at(6, 15)


async def test_catchup_skip_still_fires_a_tick_that_is_only_a_little_late(world: World) -> None:
    await world.create(catchup="skip")
    assert await world.fire_at(at(6, 0, 50)) == [(at(6, 0), "started")]


async def test_ticks_older_than_the_window_never_fire(world: World) -> None:
    await world.create(overlap="allow_all", catchup="all", catchup_window_seconds=480)
    # Back at 06:12: 06:00 is older than 480 s, 06:05 and 06:10 are within.
    assert await world.fire_at(at(6, 12)) == [(at(6, 5), "started"), (at(6, 10), "started")]
    (old,) = [t for t in await world.ticks() if t.outcome == "missed"]
    assert (old.scheduled_time, old.count, old.reason) == (at(6, 0), 1, "catchup_window")
    await world.create(key="t", catchup="all", catchup_window_seconds=30)  # (at 06:12)
    await world.fire_at(at(6, 30, 40))  # 06:30 is 40 s old: out of a 30 s window
    assert await world.started("t") == []
    assert [t.count for t in await world.ticks("t")] == [4]  # 06:15 … 06:30


async def test_pause_trigger_and_backfill_create_exactly_the_expected_times(
    world: World,
) -> None:
    await world.create(overlap="allow_all")
    await world.schedules.pause("s", PauseIn(note="maintenance"), tenant=TENANT)
    assert await world.fire_at(at(6, 20)) == []
    trigger_time = at(6, 21, 7)
    world.clock.set(trigger_time)
    triggered = await world.schedules.trigger("s", "allow_all", tenant=TENANT)
    assert (triggered.scheduled_time, triggered.outcome) == (trigger_time, "started")
    resumed = await world.schedules.resume("s", tenant=TENANT)
    assert resumed.next_fire_at == at(6, 25) and not resumed.paused  # (paused ticks: none)
    window = BackfillIn.model_validate(
        {"from": "2027-01-04T05:00:00Z", "to": "2027-01-04T05:20:00Z"}
    )
    done = await world.schedules.backfill("s", window, tenant=TENANT)
    expected = [at(5, m) for m in (0, 5, 10, 15, 20)]
    assert [(o.scheduled_time, o.outcome) for o in done] == [(t, "started") for t in expected]
    again = await world.schedules.backfill("s", window, tenant=TENANT)
    assert [o.outcome for o in again] == ["exists"] * 5
    assert await world.fire_at(at(6, 25)) == [(at(6, 25), "started")]
    ticks = await world.ticks()
    assert [(t.scheduled_time, t.source) for t in ticks] == [
        *[(t, "backfill") for t in expected],
        (trigger_time, "trigger"),
        (at(6, 25), "cron"),
    ]
    assert await world.run_count() == 7


async def test_bounds_and_jitter(world: World) -> None:
    await world.create(
        overlap="allow_all",
        start_at="2027-01-04T06:07:00Z",
        end_at="2027-01-04T06:16:00Z",
        jitter_seconds=60,
    )
    schedule = await world.schedules.get("s", tenant=TENANT)
    assert schedule.next_fire_at == at(6, 10)
    assert schedule.due_at is not None
    assert at(6, 10) <= schedule.due_at < at(6, 11)
    assert await world.fire_at(schedule.due_at - timedelta(milliseconds=1)) == []
    assert await world.fire_at(schedule.due_at) == [(at(6, 10), "started")]
    await world.fire_at(at(6, 20))
    assert await world.started() == [at(6, 10), at(6, 15)]
    assert (await world.schedules.get("s", tenant=TENANT)).next_fire_at is None


async def test_a_run_body_refused_at_a_tick_is_a_failed_tick_and_the_schedule_goes_on(
    world: World, store: RunStore
) -> None:
    agents = agent_feature.agent_service(world.runs)
    await agents.create(
        AgentIn(name="helper", description="d", model=ECHO), tenant=TENANT, actor=None
    )
    await world.create(run={"agent": "helper", "prompt": "go"})
    await agents.delete("helper", tenant=TENANT)
    assert await world.fire_at(at(6, 0)) == [(at(6, 0), "failed")]
    (tick,) = await world.ticks()
    assert tick.reason is not None and "no agent 'helper'" in tick.reason
    assert (await world.schedules.get("s", tenant=TENANT)).next_fire_at == at(6, 5)
    assert await world.run_count() == 0


async def test_two_firers_racing_start_each_tick_once(
    world: World, database_url: str, settings: Settings
) -> None:
    for i in range(12):
        await world.create(key=f"s{i}", cron="0 6 * * *", overlap="allow_all")
    other_store = features.install(RunStore(create_engine(database_url)), settings)
    try:
        other = schedule_service(RunService(other_store, settings, world.clock))
        now = at(6, 0, 1)
        world.clock.set(now)
        a, b = await asyncio.gather(world.schedules.firer.fire_due(now), other.firer.fire_due(now))
        await asyncio.gather(world.schedules.firer.fire_due(now), other.firer.fire_due(now))
    finally:
        await other_store.aclose()
    assert len(a) + len(b) == 12
    assert await world.run_count() == 12
    for i in range(12):
        assert await world.started(f"s{i}") == [at(6, 0)]


async def test_catchup_skip_does_not_count_a_ticks_jitter_as_lateness(world: World) -> None:
    for attempt in range(20):  # (a schedule whose delay for 06:00 is over 60 s: 59 in 60)
        key = f"s{attempt}"
        await world.create(key=key, catchup="skip", jitter_seconds=3600, cron="0 6 * * *")
        schedule = await world.schedules.get(key, tenant=TENANT)
        assert schedule.due_at is not None and schedule.next_fire_at == at(6, 0)
        delay = schedule.due_at - at(6, 0)
        assert delay < timedelta(hours=1)
        if delay > timedelta(seconds=60):
            break
        await world.schedules.delete(key, tenant=TENANT)
    fired = await world.fire_at(schedule.due_at + timedelta(seconds=5))
    assert fired == [(at(6, 0), "started")]


async def test_a_buffered_tick_starts_before_the_next_tick_is_decided(
    world: World, store: RunStore
) -> None:
    await world.create(overlap="buffer_one")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id
    await world.fire_at(at(6, 5))
    store.hooks.run_ended = ()  # (the run's end reached no hook)
    await world.end(first)
    # 06:10: the buffered 06:05 starts first, then 06:10 waits for it in the buffer.
    assert await world.fire_at(at(6, 10)) == [(at(6, 5), "started"), (at(6, 10), "buffered")]


async def test_a_backfill_starts_the_ticks_that_were_missed(world: World) -> None:
    await world.create(overlap="allow_all", catchup="latest")
    await world.fire_at(at(6, 11))  # 06:00 and 06:05 missed (one row), 06:10 started
    (missed,) = [t for t in await world.ticks() if t.outcome == "missed"]
    assert (missed.scheduled_time, missed.count, missed.last_time) == (at(6, 0), 2, at(6, 5))
    window = BackfillIn.model_validate(
        {"from": "2027-01-04T06:00:00Z", "to": "2027-01-04T06:10:00Z"}
    )
    done = await world.schedules.backfill("s", window, tenant=TENANT)
    assert [(o.scheduled_time, o.outcome) for o in done] == [
        (at(6, 0), "started"),
        (at(6, 5), "started"),
        (at(6, 10), "exists"),
    ]
    assert await world.started() == [at(6, 0), at(6, 5), at(6, 10)]


async def test_a_paused_schedule_has_no_next_tick_until_it_is_resumed(world: World) -> None:
    await world.create()
    paused = await world.schedules.pause("s", PauseIn(), tenant=TENANT)
    assert (paused.next_fire_at, paused.due_at) == (None, None)
    world.clock.set(at(7, 1))
    assert (await world.schedules.resume("s", tenant=TENANT)).next_fire_at == at(7, 5)


async def test_tick_rows_older_than_the_retention_are_pruned_but_not_a_buffered_one(
    world: World,
) -> None:
    await world.create(overlap="buffer_one")
    await world.fire_at(at(6, 0))
    await world.fire_at(at(6, 5))  # (buffered)
    await world.fire_at(at(6, 10))  # (skipped: buffer full)
    rows = world.schedules.rows
    assert await rows.prune(at(6, 10), 100) == 1  # 06:00's: recorded before 06:10
    assert await rows.prune(at(7, 0), 100) == 1  # 06:10's; the buffered 06:05 stays
    assert [(t.scheduled_time, t.outcome) for t in await world.ticks()] == [(at(6, 5), "buffered")]


async def test_cancel_other_catching_up_starts_only_the_last_tick(world: World) -> None:
    await world.create(overlap="cancel_other", catchup="all")
    await world.fire_at(at(6, 0))
    first = (await world.schedules.get("s", tenant=TENANT)).last_run_id or ""
    assert await world.fire_at(at(6, 11)) == [(at(6, 5), "skipped"), (at(6, 10), "started")]
    cancelled = await world.runs.get_run(first, scope=Scope.of(TENANT))
    assert cancelled.record.status == RunStatus.CANCELLED
    assert await world.started() == [at(6, 0), at(6, 10)]
