"""Usage reports and counts from the rollups are exact at every instant: whatever the fold
has folded, whatever retention has deleted, against every call ever made (both
databases)."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.events import EventType
from app.core.lifecycle import STAYS, TABLE, TERMINAL, RunStatus, Transition
from app.core.scope import Scope
from app.store.backend.engines import create_engine
from app.store.changes import Change
from app.store.fold import fold, fold_batch
from app.store.reports import activity, count_by_status
from app.store.retention import purge
from app.store.run_records import NewEvent, utc
from app.store.runs import RunStore
from app.store.schema import runs
from app.store.usage import usage_totals
from tests.helpers import bare_run

MONTH = datetime(2026, 10, 1, tzinfo=UTC)
DAYS = 30
TOKENS = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens")
MODELS = [("scripted", "a"), ("scripted", "b"), ("openai", "gpt")]
TABLES = (
    "runs",
    "run_configs",
    "run_events",
    "model_calls",
    "unfolded_runs",
    "usage_hourly",
    "run_counts",
    "run_endings",
)


@dataclass
class Call:
    at: datetime
    provider: str
    model: str
    failed: bool
    tokens: dict[str, int]
    cost_millis: int | None
    run: str
    final: str | None = None  # the run's status when retention deleted it


@dataclass
class World:
    """What the traffic did, as the oracle knows it."""

    calls: list[Call] = field(default_factory=list)
    status: dict[str, str] = field(default_factory=dict)  # stored runs
    updated: dict[str, datetime] = field(default_factory=dict)
    retried: bool = False

    def expected(self, start: datetime, end: datetime) -> dict[str, Any]:
        """Calls of stored runs in [start, end), and of deleted runs whose whole hour is."""
        out: dict[str, Any] = {"calls": 0, "failed_calls": 0, "cost_millis": None}
        out |= {t: 0 for t in TOKENS}
        out["by_model"] = Counter()
        out["by_status"] = Counter()
        for c in self.calls:
            hour = c.at.replace(minute=0, second=0, microsecond=0)
            if c.run in self.status:
                inside = start <= c.at < end
            else:
                inside = start <= hour and hour + timedelta(hours=1) <= end
            if not inside:
                continue
            out["calls"] += 1
            out["failed_calls"] += c.failed
            for t in TOKENS:
                out[t] += c.tokens[t]
            if c.cost_millis is not None:
                out["cost_millis"] = (out["cost_millis"] or 0) + c.cost_millis
            out["by_model"][f"{c.provider}:{c.model}"] += 1
            out["by_status"][self.status.get(c.run, c.final)] += 1
        return out


async def _apply(store: RunStore, world: World, step: tuple[Any, ...], n: int) -> None:
    engine = store.engine
    kind = step[0]
    if kind == "new":
        run_id, at = f"r{n}", MONTH + timedelta(minutes=step[1])
        async with engine.begin() as conn:
            await bare_run(conn, run_id, at)
        world.status[run_id], world.updated[run_id] = "queued", at
        return
    stored = sorted(world.status)
    if kind == "call" and stored:  # (on any run: a lost lease's calls are billed late)
        _, pick, minutes, model, failed, tokens, cost = step
        run_id = stored[pick % len(stored)]
        at = world.updated[run_id] + timedelta(minutes=minutes, microseconds=n)
        provider, name = MODELS[model]
        values = dict(zip(TOKENS, tokens, strict=True))
        data = {"turn": 1, "provider": provider, "model": name}
        data |= {"usage": {**values, "total_tokens": sum(tokens)}}
        data |= {"cost_usd": None if cost is None else cost / 1000}
        called = NewEvent(EventType.MODEL_FAILED if failed else EventType.MODEL_CALLED, data)
        changed, _ = await store.apply(
            run_id, Change(Transition.BILL, events=(called,)), at, scope=Scope.ALL
        )
        assert changed is not None
        world.updated[run_id] = at
        world.calls.append(Call(at, provider, name, failed, values, cost, run_id))
    elif kind == "status":
        _, pick, status = step
        # A run the lifecycle lets into `status`, by that transition (the store's own
        # writes: an ending hands the run to the fold, a retry takes it back).
        moves = {
            run_id: t
            for run_id in stored
            for (source, t), target in sorted(TABLE.items())
            if source == world.status[run_id] and target == status and t not in STAYS
        }
        if not moves:
            return
        run_id = sorted(moves)[pick % len(moves)]
        world.retried |= RunStatus(world.status[run_id]) in TERMINAL
        at = world.updated[run_id] + timedelta(seconds=1)
        changed, _ = await store.apply(run_id, Change(moves[run_id]), at, scope=Scope.ALL)
        assert changed is not None and changed.status == status
        world.status[run_id], world.updated[run_id] = status, at
    elif kind == "fold":
        await fold_batch(engine, step[1])
    elif kind == "purge":
        cutoff = MONTH + timedelta(days=step[1])
        await purge(engine, cutoff, batch=step[2])
        for run_id in [r for r, s in world.status.items() if RunStatus(s) in TERMINAL]:
            if world.updated[run_id] < cutoff:
                for c in world.calls:
                    if c.run == run_id:
                        c.final = world.status[run_id]
                del world.status[run_id]


STATUSES = [s.value for s in RunStatus]
STEP = st.one_of(
    st.tuples(st.just("new"), st.integers(0, DAYS * 24 * 60)),
    st.tuples(
        st.just("call"),
        st.integers(0, 1000),
        st.integers(0, 600),
        st.integers(0, len(MODELS) - 1),
        st.booleans(),
        st.tuples(*[st.integers(0, 10**9) for _ in TOKENS]),
        st.none() | st.integers(0, 10**6),
    ),
    st.tuples(st.just("status"), st.integers(0, 1000), st.sampled_from(STATUSES)),
    st.tuples(st.just("fold"), st.integers(1, 4)),
    st.tuples(st.just("purge"), st.integers(0, DAYS + 2), st.integers(1, 3)),
)
# A range around a call: (which call, minutes and seconds before it, minutes after it).
RANGE = st.tuples(st.integers(0, 1000), st.integers(0, 180), st.integers(0, 180))


async def _check(store: RunStore, world: World, start: datetime, end: datetime) -> None:
    async with store.engine.connect() as conn:
        got = await usage_totals(conn, start, end, scope=Scope.ALL)
        by_status = sa.select(runs.c.status, sa.func.count()).group_by(runs.c.status)
        stored = {status: n for status, n in (await conn.execute(by_status)).all()}
    want = world.expected(start, end)
    assert {k: got[k] for k in ("calls", "failed_calls", *TOKENS)} == {
        k: want[k] for k in ("calls", "failed_calls", *TOKENS)
    }
    assert got["total_tokens"] == sum(want[t] for t in TOKENS)
    if want["cost_millis"] is None:
        assert got["cost_usd"] is None
    else:
        assert got["cost_usd"] == pytest.approx(want["cost_millis"] / 1000, abs=1e-6)
    assert {k: v["calls"] for k, v in got["by_model"].items()} == dict(want["by_model"])
    if not world.retried:  # (a retried run's folded calls keep the status they had)
        assert {k: v["calls"] for k, v in got["by_status"].items()} == dict(want["by_status"])
    assert sum(v["calls"] for v in got["by_status"].values()) == got["calls"]
    assert await count_by_status(store.engine, scope=Scope.ALL) == stored


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=st.lists(STEP, max_size=60), ranges=st.lists(RANGE, min_size=1, max_size=4))
def test_reports_equal_every_call_ever_made_through_folds_and_sweeps(
    database_url: str, steps: list[tuple[Any, ...]], ranges: list[tuple[int, int]]
) -> None:
    async def scenario() -> None:
        store = RunStore(create_engine(database_url))
        try:
            async with store.engine.begin() as conn:
                for table in TABLES:
                    await conn.exec_driver_sql(f"DELETE FROM {table}")
            world = World()
            month = (MONTH, MONTH + timedelta(days=DAYS + 2))
            for n, step in enumerate(steps):
                await _apply(store, world, step, n)
                if n % 7 == 0:
                    await _check(store, world, *month)
            await _check(store, world, *month)
            for ranges_checked in range(2):
                for pick, before, after in ranges if world.calls else []:
                    at = world.calls[pick % len(world.calls)].at
                    start = at - timedelta(minutes=before, seconds=before % 7)
                    await _check(store, world, start, at + timedelta(minutes=after))
                if not ranges_checked:
                    await fold(store.engine)  # everything folded: the same answers
                    await _check(store, world, *month)
        finally:
            await store.aclose()

    asyncio.run(scenario())


async def test_the_fold_moves_finished_runs_into_the_rollups_once(store: RunStore) -> None:
    """Counts, usage and activity read the same before and after a fold, and a second
    fold finds nothing."""
    world = World()
    for n, step in enumerate(
        [
            ("new", 0),
            ("new", 5),
            ("call", 0, 1, 0, False, (10, 20, 0, 0), 1500),
            ("call", 1, 1, 1, True, (1, 0, 0, 0), None),
            ("status", 0, "running"),
            ("status", 0, "completed"),
            ("status", 0, "running"),
            ("status", 0, "failed"),
        ]
    ):
        await _apply(store, world, step, n)
    now = max(world.updated.values()) + timedelta(minutes=1)
    month = (MONTH, MONTH + timedelta(days=DAYS))
    before = await usage_totals_of(store, *month)
    counts = await count_by_status(store.engine, scope=Scope.ALL)
    ended = (await activity(store.engine, now, scope=Scope.ALL)).ended
    assert counts == {"completed": 1, "failed": 1}
    assert ended == {"completed": 1, "failed": 1}
    assert await fold(store.engine) == 2
    assert await fold(store.engine) == 0
    assert await usage_totals_of(store, *month) == before
    assert await count_by_status(store.engine, scope=Scope.ALL) == counts
    assert (await activity(store.engine, now, scope=Scope.ALL)).ended == ended
    assert before["by_status"]["completed"]["input_tokens"] == 10
    assert before["by_status"]["failed"]["failed_calls"] == 1
    assert before["cost_usd"] == pytest.approx(1.5)


async def test_a_retried_run_leaves_the_count_of_the_status_it_left(store: RunStore) -> None:
    world = World()
    for n, step in enumerate([("new", 0), ("call", 0, 1, 0, False, (5, 5, 0, 0), 10)]):
        await _apply(store, world, step, n)
    await _apply(store, world, ("status", 0, "running"), 2)
    await _apply(store, world, ("status", 0, "failed"), 3)
    await fold(store.engine)
    await _apply(store, world, ("status", 0, "queued"), 4)  # an operator's retry
    assert await count_by_status(store.engine, scope=Scope.ALL) == {"queued": 1}
    await fold(store.engine)
    assert await count_by_status(store.engine, scope=Scope.ALL) == {"queued": 1}
    await _apply(store, world, ("status", 0, "running"), 5)
    await _apply(store, world, ("status", 0, "completed"), 6)
    assert await count_by_status(store.engine, scope=Scope.ALL) == {"completed": 1}
    await fold(store.engine)
    assert await count_by_status(store.engine, scope=Scope.ALL) == {"completed": 1}
    totals = await usage_totals_of(store, MONTH, MONTH + timedelta(days=DAYS))
    assert totals["calls"] == 1 and totals["input_tokens"] == 5
    assert set(totals["by_status"]) == {"failed"}  # the status its calls were folded with


async def test_calls_billed_after_a_run_was_folded_are_reported_and_folded(
    store: RunStore,
) -> None:
    """A lost lease's calls reach the ledger after the run ended and was folded: they are
    in every report at once and fold without counting the run again."""
    world = World()
    steps = [("new", 0), ("status", 0, "running"), ("status", 0, "completed")]
    for n, step in enumerate(steps):
        await _apply(store, world, step, n)
    assert await fold(store.engine) == 1
    await _apply(store, world, ("call", 0, 1, 0, False, (7, 3, 0, 0), 20), 3)
    month = (MONTH, MONTH + timedelta(days=DAYS))
    for folds in (1, 0):
        totals = await usage_totals_of(store, *month)
        assert totals["calls"] == 1 and totals["input_tokens"] == 7
        assert set(totals["by_status"]) == {"completed"}
        assert await count_by_status(store.engine, scope=Scope.ALL) == {"completed": 1}
        assert await fold(store.engine) == folds


async def test_calls_before_a_retry_keep_the_status_the_run_left_whenever_it_folds(
    store: RunStore,
) -> None:
    """A run retried before its fold: its earlier calls count under the status it left,
    as they would had it been folded first, and it is counted once, as it ends."""
    world = World()
    steps = [("new", 0), ("call", 0, 1, 0, False, (5, 5, 0, 0), 10)]
    steps += [("status", 0, s) for s in ("running", "failed", "queued", "running")]
    steps += [("call", 0, 1, 1, False, (2, 1, 0, 0), None), ("status", 0, "completed")]
    for n, step in enumerate(steps):
        await _apply(store, world, step, n)
    month = (MONTH, MONTH + timedelta(days=DAYS))
    for _ in range(2):
        totals = await usage_totals_of(store, *month)
        assert totals["by_status"]["failed"]["input_tokens"] == 5
        assert totals["by_status"]["completed"]["input_tokens"] == 2
        assert await count_by_status(store.engine, scope=Scope.ALL) == {"completed": 1}
        await fold(store.engine)


async def usage_totals_of(store: RunStore, start: datetime, end: datetime) -> dict[str, Any]:
    async with store.engine.connect() as conn:
        return await usage_totals(conn, start, end, scope=Scope.ALL)


@pytest.mark.parametrize(
    "start, end",
    [
        (datetime.min.replace(tzinfo=UTC), datetime.max.replace(tzinfo=UTC, microsecond=0)),
        (MONTH + timedelta(minutes=30), MONTH + timedelta(minutes=30)),  # empty
        (MONTH + timedelta(minutes=10), MONTH + timedelta(minutes=20)),  # inside one hour
    ],
)
async def test_ranges_at_the_calendars_ends_and_inside_an_hour(
    store: RunStore, start: datetime, end: datetime
) -> None:
    world = World()
    await _apply(store, world, ("new", 0), 0)
    await _apply(store, world, ("call", 0, 15, 0, False, (1, 2, 3, 4), 7), 1)
    got = await usage_totals_of(store, start, end)
    assert got["calls"] == world.expected(start, end)["calls"]
    assert got["input_tokens"] == world.expected(start, end)["input_tokens"]


async def test_a_suspended_run_is_suspended_since_its_suspension_not_its_last_change(
    store: RunStore,
) -> None:
    """An answer to one of two calls changes the run, not when it suspended."""
    from app.service.runs import RunService
    from app.service.schemas import ToolResultsIn
    from app.store import reports
    from app.store.schema import run_events
    from tests.conftest import make_settings
    from tests.helpers import suspended_run

    service = RunService(store, make_settings(str(store.engine.url)))
    view = await suspended_run(service)  # two pending calls
    async with store.engine.connect() as conn:
        event = sa.select(run_events.c.created_at).where(
            run_events.c.run_id == view.record.id, run_events.c.type == "run.requires_action"
        )
        at = (await conn.execute(event)).scalar_one()
    since = await reports.suspended_since(store.engine, [view.record.id])
    assert since[view.record.id] == utc(at)  # (the suspension and its event: one time)
    await asyncio.sleep(0.05)
    first = view.pending[0]
    await service.submit_tool_results(
        ToolResultsIn.model_validate({"results": [{"tool_call_id": first.call_id, "output": "3"}]}),
        run_id=view.record.id,
        scope=Scope.ALL,
    )
    changed = await store.get(view.record.id, scope=Scope.ALL)
    assert changed is not None and changed.updated_at > since[view.record.id]
    assert await reports.suspended_since(store.engine, [view.record.id]) == since
    ages = await reports.suspended_ages(store.engine, changed.updated_at, scope=Scope.ALL)
    assert ages == [(changed.updated_at - since[view.record.id]).total_seconds()]
