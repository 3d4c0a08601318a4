"""What due ticks become (`app.schedules.plan.due`), without IO: long outages are
counted, not walked to the end, and the newest tick is found however many came before."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

from app.schedules import plan
from app.schedules.cron import parse

EVERY_MINUTE = parse("* * * * *")
START = datetime(2027, 1, 1, tzinfo=UTC)


def test_a_year_of_missed_minutes_under_latest_fires_the_newest_and_counts_the_rest() -> None:
    now = START + timedelta(days=365, seconds=30)
    began = time.perf_counter()
    due = plan.due(
        EVERY_MINUTE,
        START,
        now,
        catchup="latest",
        window_seconds=366 * 86400,
        bounds=plan.Window(),
    )
    took = time.perf_counter() - began
    newest = now.replace(second=0)
    assert due.fire == [newest]
    (missed,) = due.missed
    assert (missed.first, missed.count, missed.reason) == (START, plan.COUNT_LIMIT, "catchup")
    assert due.next_fire_at == newest + timedelta(minutes=1)
    assert took < 30  # (a bound on the walk, not a benchmark: 100k ticks, not 525k)


def test_ticks_before_the_window_are_one_row_and_all_fires_at_most_a_pass() -> None:
    now = START + timedelta(hours=5)
    due = plan.due(
        EVERY_MINUTE, START, now, catchup="all", window_seconds=7200, bounds=plan.Window()
    )
    (old,) = due.missed
    assert (old.first, old.last, old.count) == (START, now - timedelta(hours=2, minutes=1), 180)
    assert len(due.fire) == plan.FIRE_PER_PASS  # (of the window's 121)
    assert due.fire[0] == now - timedelta(hours=2)
    assert due.next_fire_at == due.fire[-1] + timedelta(minutes=1)


def test_a_schedule_past_its_end_has_no_next_tick() -> None:
    end = START + timedelta(minutes=3)
    due = plan.due(
        EVERY_MINUTE,
        START,
        START + timedelta(minutes=10),
        catchup="all",
        window_seconds=86400,
        bounds=plan.Window(end_at=end),
    )
    assert due.fire == [START + timedelta(minutes=m) for m in range(4)]
    assert due.next_fire_at is None


def test_overlap_actions() -> None:
    assert plan.on_overlap("skip", False, None) == plan.START
    assert plan.on_overlap("skip", True, None) == plan.SKIP
    assert plan.on_overlap("buffer_one", True, None) == plan.BUFFER
    assert plan.on_overlap("buffer_one", True, START) == plan.SKIP
    assert plan.on_overlap("allow_all", True, START) == plan.START
    assert plan.on_overlap("cancel_other", True, None) == plan.CANCEL_AND_START
