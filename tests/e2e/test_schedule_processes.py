"""Two real `agentrun worker` processes on PostgreSQL and a schedule every minute: over
three ticks (two caught up at once, one a minute at most later), exactly one run per
tick, though one worker is killed with SIGKILL at the third tick (both race for it; the
killed one may die holding the row's lock, which PostgreSQL releases with its
connection)."""

from __future__ import annotations

import asyncio
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
import pytest

from app.clock import FakeClock
from app.schedules import schedule_service
from app.schedules.specs import PauseIn, ScheduleIn
from app.service.runs import RunService
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.e2e.processes import spawn, stop, wait_until

ECHO = {"provider": "scripted", "name": "echo"}


def next_minute(after: datetime) -> datetime:
    return after.replace(second=0, microsecond=0) + timedelta(minutes=1)


async def sleep_until(when: datetime) -> None:
    await asyncio.sleep(max(0.0, (when - datetime.now(UTC)).total_seconds()))


def runs_by_tick(url: str) -> Counter[str]:
    """The schedule's runs by their scheduled time, as the runs' own configuration says."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT config->'schedule'->>'scheduled_time' FROM run_configs "
            "WHERE config ? 'schedule'"
        ).fetchall()
    return Counter(r[0] for r in rows)


@pytest.mark.starts_first  # (up to a minute of wall clock, mostly waiting)
async def test_each_tick_starts_one_run_though_a_worker_is_killed_at_a_tick(
    clean_postgres: str, tmp_path: Path
) -> None:
    url = clean_postgres
    logs = [tmp_path / f"w{i}.log" for i in range(2)]
    workers = [spawn(["worker", "--concurrency", "1"], url, log) for log in logs]
    store = RunStore(create_engine(url))
    try:
        for log in logs:
            wait_until(lambda log=log: "worker started" in log.read_text(), 30, log.name)
        if datetime.now(UTC).second >= 57:  # (the third tick, the kill's, 3 s away at least)
            await sleep_until(next_minute(datetime.now(UTC)))
        # Created as of two minutes ago, catching up on all: its first two ticks are due at
        # once (three ticks in at most a minute of waiting, not three minutes).
        clock = FakeClock(datetime.now(UTC) - timedelta(minutes=2))
        service = schedule_service(RunService(store, make_settings(url), clock))
        body = {
            "key": "every-minute",
            "cron": "* * * * *",
            "overlap": "allow_all",
            "catchup": "all",
            "run": {"model": ECHO, "prompt": "tick"},
        }
        made = await service.create(ScheduleIn.model_validate(body), tenant="default", actor=None)
        assert made.next_fire_at is not None and made.next_fire_at <= datetime.now(UTC)
        ticks = [made.next_fire_at + timedelta(minutes=i) for i in range(3)]
        assert ticks[1] <= datetime.now(UTC) < ticks[2]
        await sleep_until(ticks[2])  # both workers race for this tick: kill one now
        stop(workers[0], signal.SIGKILL)
        deadline = time.monotonic() + 30
        expected = {t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in ticks}
        while set(runs_by_tick(url)) < expected:  # (the third tick's run, one worker's)
            assert time.monotonic() < deadline, runs_by_tick(url)
            await asyncio.sleep(0.1)
        clock.set(datetime.now(UTC))
        await service.pause("every-minute", PauseIn(note="test over"), tenant="default")
    finally:
        codes = [stop(w) for w in workers[1:]]
        await store.aclose()
    assert codes == [0]
    counted = runs_by_tick(url)
    assert counted == Counter({t: 1 for t in expected}), counted
    with psycopg.connect(url) as conn:
        outcomes = conn.execute(
            "SELECT scheduled_time, outcome, run_id FROM schedule_ticks ORDER BY 1"
        ).fetchall()
    assert [(t, o) for t, o, _ in outcomes] == [(t, "started") for t in ticks]
    assert len({r for _, _, r in outcomes}) == 3
