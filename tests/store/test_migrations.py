"""The models (app.store.schema) and the Alembic revisions never drift apart."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import create_engine
from sqlalchemy import create_engine as create_engine_sync

from alembic import command
from app import features
from app.core import AgentRun
from app.core.events import EventType
from app.core.lifecycle import RunStatus, Transition
from app.core.scope import Scope
from app.core.types import USAGE_FIELDS
from app.service.errors import RunNotFound
from app.service.principals import DEFAULT_TENANT
from app.service.runs import RunService
from app.service.schemas import RunCreate, ToolResultsIn
from app.store import reports
from app.store.backend.engines import create_engine as create_async_engine
from app.store.backend.engines import sync_url
from app.store.changes import Change
from app.store.fold import fold
from app.store.migrate import alembic_config, upgrade_to_head
from app.store.run_records import RUN_USAGE_KEYS, NewEvent
from app.store.runs import RunStore
from app.store.schema import metadata
from app.toolqueue.sql import ToolCallQueue
from tests.conftest import fresh_database, make_settings
from tests.helpers import drive_once, results_for, run_body, suspended_run

TEXT_ONLY = {"provider": "scripted", "name": "demo", "script": [{"text": "done"}]}
#: A range that holds every call the tests make.
DAY = (datetime.now(UTC) - timedelta(days=1), datetime.now(UTC) + timedelta(days=1))


def test_models_and_migrations_do_not_drift(database_url: str) -> None:
    engine = create_engine(sync_url(database_url))
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diff = compare_metadata(context, metadata)
    engine.dispose()
    assert diff == [], f"schema drift between app/store/schema/ and alembic/: {diff}"


def test_sqlite_indexes_made_by_the_migrations_are_the_models(tmp_path: Path) -> None:
    """Column order and direction included, which the drift check does not compare: a
    migration that copies a table on SQLite (batch) makes its indexes again, and once
    made `priority DESC` of the claim's index a plain `priority`."""

    def indexes(url: str) -> dict[str, str]:
        engine = create_engine(url)
        with engine.connect() as conn:
            rows = conn.execute(
                sa.text("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql != ''")
            ).all()
        engine.dispose()
        return {name: " ".join(sql.replace('"', "").split()) for name, sql in rows}

    migrated, modelled = f"sqlite:///{tmp_path / 'migrated.db'}", f"sqlite:///{tmp_path / 'm.db'}"
    upgrade_to_head(migrated)
    engine = create_engine(modelled)
    metadata.create_all(engine)
    engine.dispose()
    assert indexes(migrated) == indexes(modelled)
    assert "priority DESC" in indexes(migrated)["ix_runs_claim"]


def test_migrations_are_at_head(database_url: str) -> None:
    from alembic.script import ScriptDirectory

    engine = create_engine(sync_url(database_url))
    with engine.connect() as conn:
        current = MigrationContext.configure(conn).get_current_revision()
    engine.dispose()
    head = ScriptDirectory.from_config(alembic_config(database_url)).get_current_head()
    assert current == head


# --- 0006: history appended instead of rewritten -----------------------------------------


@pytest.fixture(params=["postgres", "sqlite"])
def own_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database of this test's own, at head."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'migrate.db'}"
        upgrade_to_head(url)
        yield url
        return
    with fresh_database(request.getfixturevalue("postgres_server")) as url:
        yield url


async def test_runs_stored_before_0006_move_to_the_log_and_then_resume_and_complete(
    own_database: str,
) -> None:
    """Runs suspended (one partly answered) and queued under revision 0005's layout, the
    whole run in `runs.state`, are moved by 0006 to control document + log, then resume
    and complete with their whole conversation. The 0005 rows are made as that release
    made them: by 0006's downgrade of runs this release created."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    suspended = [await suspended_run(service) for _ in range(3)]
    partly = suspended[0]
    first = partly.pending[0]
    await service.submit_tool_results(
        ToolResultsIn.model_validate({"results": [{"tool_call_id": first.call_id, "output": "3"}]}),
        run_id=partly.record.id,
        scope=Scope.ALL,
    )
    queued, _ = await service.create_run(run_body())
    before = {v.record.id: await conversation(service, v.record.id) for v in suspended}
    await store.aclose()

    command.downgrade(alembic_config(own_database), "0005")
    engine = create_engine_sync(sync_url(own_database))
    with engine.connect() as conn:
        states = dict(conn.execute(sa.text("SELECT id, state FROM runs")).all())
        assert "run_messages" not in sa.inspect(conn).get_table_names()
    engine.dispose()
    for view in suspended:  # whole documents, as 0005 stored them
        assert AgentRun.from_json(states[view.record.id]).messages() == before[view.record.id]

    upgrade_to_head(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    try:
        for view in suspended:
            assert await conversation(service, view.record.id) == before[view.record.id]
            current = await service.get_run(view.record.id, scope=Scope.ALL)
            await service.submit_tool_results(
                results_for(current), run_id=view.record.id, scope=Scope.ALL
            )
        for _ in range(len(suspended)):
            await drive_once(store, settings)
        await drive_once(store, settings)  # the queued run suspends
        await service.submit_tool_results(
            results_for(await service.get_run(queued.record.id, scope=Scope.ALL)),
            run_id=queued.record.id,
            scope=Scope.ALL,
        )
        await drive_once(store, settings)
        for view in [*suspended, queued]:
            done = await service.get_run(view.record.id, scope=Scope.ALL)
            assert done.record.status == RunStatus.COMPLETED, done.record
            run = await service.load_run(view.record.id, scope=Scope.ALL)
            assert run.is_done() and len(run.messages()) == 4  # prompt, calls, results, text
            if view in suspended:
                assert run.messages()[:2] == before[view.record.id]
    finally:
        await store.aclose()


async def conversation(service: RunService, run_id: str) -> tuple[Any, ...]:
    return (await service.load_run(run_id, scope=Scope.ALL)).messages()


async def test_0006_downgrade_keeps_a_compacted_run_s_conversation_as_it_is_now(
    own_database: str,
) -> None:
    """A compaction's log batch replaces the lists (`"r": 1`): 0006's downgrade makes the
    whole document of the conversation the run has now (its compacted history and its own
    messages), not every batch's lists joined; the upgrade back loads it the same."""
    settings = make_settings(own_database)
    store = features.install(RunStore(create_async_engine(own_database)), settings)
    service = RunService(store, settings)
    pad = " and more" * 300
    history = [
        {"role": "user", "content": "U1: read the log"},
        {"role": "assistant", "content": "A1: page one" + pad},
        {"role": "user", "content": "U2: go on"},
        {"role": "assistant", "content": "A2: page two" + pad},
        {"role": "user", "content": "U3: and the last"},
        {"role": "assistant", "content": "A3: page three"},
    ]
    summariser = {"provider": "scripted", "name": "summariser", "script": [{"text": "SUMMARY"}]}
    body = RunCreate.model_validate(
        {
            "prompt": "PROMPT: count the pages",
            "history": history,
            "model": TEXT_ONLY,
            "compaction": {"threshold_tokens": 1000, "keep_recent_turns": 1, "model": summariser},
        }
    )
    view, _ = await service.create_run(body)
    run_id = view.record.id
    assert await drive_once(store, settings) == RunStatus.QUEUED  # (compacted)
    assert await drive_once(store, settings) == RunStatus.COMPLETED
    run = await service.load_run(run_id, scope=Scope.ALL)
    compacted, own = run.full_history()[: -len(run.messages())], run.messages()
    assert len(compacted) == 5 and [len(own), len(run.full_history())] == [2, 7]
    await store.aclose()

    command.downgrade(alembic_config(own_database), "0005")
    engine = create_engine_sync(sync_url(own_database))
    with engine.connect() as conn:
        state = conn.execute(sa.text("SELECT state FROM runs WHERE id = :id"), {"id": run_id})
        whole = AgentRun.from_json(state.scalar_one())
    engine.dispose()
    assert whole.full_history()[: -len(whole.messages())] == compacted
    assert whole.messages() == own
    response = whole.response()
    assert response is not None and response.output == "done"

    upgrade_to_head(own_database)
    store = RunStore(create_async_engine(own_database))
    try:
        again = await RunService(store, settings).load_run(run_id, scope=Scope.ALL)
        assert again.full_history() == run.full_history() and again.messages() == own
    finally:
        await store.aclose()


async def test_0009_downgrade_writes_back_zero_counters_and_waiting_reasons(
    own_database: str,
) -> None:
    """This release stores lean documents (no zero usage counters) and leaves a queued or
    claimed run's waiting reason to its status and lease; 0009's downgrade writes both
    back, so the previous release, which requires every counter, loads every run."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    view = await suspended_run(service)
    await service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
    queued = await service.get_run(view.record.id, scope=Scope.ALL)
    assert queued.record.waiting_reason == {"type": "queued"}
    await store.aclose()
    engine = create_engine_sync(sync_url(own_database))
    with engine.connect() as conn:
        lean_state, reason, lean_usage = conn.execute(
            sa.text("SELECT state, waiting_reason, usage FROM runs WHERE id = :id"),
            {"id": view.record.id},
        ).one()
    assert reason in (None, "null") and "cache_creation_input_tokens" not in lean_state
    assert "reasoning_tokens" not in str(lean_usage)  # (zero in a scripted run)

    command.downgrade(alembic_config(own_database), "0008")
    with engine.connect() as conn:
        state, reason, usage = conn.execute(
            sa.text("SELECT state, waiting_reason, usage FROM runs WHERE id = :id"),
            {"id": view.record.id},
        ).one()
        bodies = conn.execute(sa.text("SELECT body FROM run_messages ORDER BY seq")).scalars()
        calls = [c for body in bodies for c in orjson.loads(body).get("c", [])]
    engine.dispose()
    reason = orjson.loads(reason) if isinstance(reason, str) else reason
    assert reason == {"type": "queued"}
    billed = orjson.loads(usage) if isinstance(usage, str) else usage
    assert billed is not None and set(billed) >= set(RUN_USAGE_KEYS)
    doc = orjson.loads(state)
    assert set(doc["usage"]) == set(USAGE_FIELDS)
    assert calls and all(set(c["usage"]) == set(USAGE_FIELDS) for c in calls)
    upgrade_to_head(own_database)


# --- 0011: usage rollups ------------------------------------------------------------------


async def test_0011_moves_daily_usage_into_hourly_rollups_and_back(own_database: str) -> None:
    """Usage that retention kept per day (revision 0005's `usage_daily`) counts in the
    first hour of its day after 0011; a stored run's calls still count from the ledger and
    once folded; 0011's downgrade writes back per day only what no stored run holds."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    await service.create_run(run_body(model=TEXT_ONLY))
    assert await drive_once(store, settings) == RunStatus.COMPLETED
    waiting = await suspended_run(service)
    suspended = await reports.suspended_since(store.engine, [waiting.record.id])
    await store.aclose()
    command.downgrade(alembic_config(own_database), "0010")
    engine = create_engine_sync(sync_url(own_database))
    with engine.begin() as conn:
        called = conn.execute(sa.text("SELECT min(created_at) FROM model_calls")).scalar_one()
        day = (called if not isinstance(called, str) else datetime.fromisoformat(called)).date()
        earlier = day - timedelta(days=3)
        conn.execute(
            sa.text(
                "INSERT INTO usage_daily VALUES (:day, 'openai', 'gpt', 'failed',"
                " 4, 1, 100, 50, 7, 3, 160, 0.25)"
            ),
            {"day": earlier},
        )
    upgrade_to_head(own_database)
    store = RunStore(create_async_engine(own_database))
    midnight = datetime.combine(earlier, time(), UTC)
    try:
        hour = await store.usage_totals(midnight, midnight + timedelta(hours=1), scope=Scope.ALL)
        assert (hour["calls"], hour["failed_calls"], hour["input_tokens"]) == (4, 1, 100)
        assert hour["by_status"]["failed"]["total_tokens"] == 160
        assert hour["by_model"]["openai:gpt"]["cost_usd"] == 0.25
        assert (await store.usage_totals(midnight + timedelta(hours=1), midnight, scope=Scope.ALL))[
            "calls"
        ] == 0
        whole = (midnight, datetime.combine(day + timedelta(days=1), time(), UTC))
        before = await store.usage_totals(*whole, scope=Scope.ALL)
        assert before["calls"] == 6 and before["by_status"]["completed"]["calls"] == 1
        counts = {"completed": 1, "requires_action": 1}
        assert await store.count_by_status(scope=Scope.ALL) == counts
        assert await fold(store.engine) == 1  # the run stored at the upgrade
        assert await store.usage_totals(*whole, scope=Scope.ALL) == before
        assert await store.count_by_status(scope=Scope.ALL) == counts
        # The suspended run's suspension time, from its event.
        assert await reports.suspended_since(store.engine, [waiting.record.id]) == suspended
    finally:
        await store.aclose()
    command.downgrade(alembic_config(own_database), "0010")
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT day, run_status, calls FROM usage_daily")).all()
    engine.dispose()
    assert [(str(d)[:10], s, n) for d, s, n in rows] == [(str(earlier), "failed", 4)]
    upgrade_to_head(own_database)


# --- 0013: runs belong to tenants ----------------------------------------------------------


async def test_runs_stored_before_0013_land_in_the_default_tenant_and_complete(
    own_database: str,
) -> None:
    """Runs queued, suspended and partly answered, a completed and folded run and an
    idempotent one, stored under revision 0012 (no tenant anywhere), are the default
    tenant's after 0013: found by its scoped reads (and by no other tenant's), counted in
    its rollups, their idempotency key still replays, and they complete."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    done, _ = await service.create_run(run_body(model=TEXT_ONLY))
    assert await drive_once(store, settings) == RunStatus.COMPLETED
    assert await fold(store.engine) == 1
    suspended = [await suspended_run(service, tool_queue=q) for q in (None, "gpu")]
    partly = suspended[0]
    await service.submit_tool_results(
        ToolResultsIn.model_validate(
            {"results": [{"tool_call_id": partly.pending[0].call_id, "output": "3"}]}
        ),
        run_id=partly.record.id,
        scope=Scope.ALL,
    )
    queued, _ = await service.create_run(run_body(), idempotency_key="before-tenants")
    usage = await store.usage_totals(*DAY, scope=Scope.ALL)
    await store.aclose()

    command.downgrade(alembic_config(own_database), "0012")
    engine = create_engine_sync(sync_url(own_database))
    with engine.connect() as conn:
        for table in ("runs", "run_configs", "tool_calls", "model_calls", "usage_hourly"):
            columns = {c["name"] for c in sa.inspect(conn).get_columns(table)}
            assert "tenant_id" not in columns, table
    engine.dispose()

    upgrade_to_head(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    ids = [v.record.id for v in (done, *suspended, queued)]
    try:
        for run_id in ids:
            assert (
                await service.get_run(run_id, scope=Scope.of(DEFAULT_TENANT))
            ).record.id == run_id
            with pytest.raises(RunNotFound):
                await service.get_run(run_id, scope=Scope.of("acme"))
        listed, _ = await service.list_runs(
            status=None, limit=10, cursor=None, scope=Scope.of(DEFAULT_TENANT)
        )
        assert {v.record.id for v in listed} == set(ids)
        assert (
            await service.list_runs(status=None, limit=10, cursor=None, scope=Scope.of("acme"))
        )[0] == []
        assert await store.usage_totals(*DAY, scope=Scope.of(DEFAULT_TENANT)) == usage
        assert (await store.usage_totals(*DAY, scope=Scope.of("acme")))["calls"] == 0
        assert await store.count_by_status(Scope.of(DEFAULT_TENANT)) == {
            "completed": 1,
            "requires_action": 2,
            "queued": 1,
        }
        replay, created = await service.create_run(run_body(), idempotency_key="before-tenants")
        assert not created and replay.record.id == queued.record.id
        # The queued call is the default tenant's `gpu` queue's (and no other tenant's).
        now = datetime.now(UTC)
        later = now + timedelta(seconds=30)
        queue = ToolCallQueue(store.backend)
        assert await queue.lease_calls("gpu", "ex", now, later, 9, "acme") == []
        leased = await queue.lease_calls("gpu", "ex", now, later, 9, DEFAULT_TENANT)
        assert {c.run_id for c in leased} == {suspended[1].record.id}
        for view in suspended:
            current = await service.get_run(view.record.id, scope=Scope.of(DEFAULT_TENANT))
            await service.submit_tool_results(
                results_for(current), run_id=view.record.id, scope=Scope.of(DEFAULT_TENANT)
            )
        for _ in range(3):
            await drive_once(store, settings)
        await service.submit_tool_results(
            results_for(await service.get_run(queued.record.id, scope=Scope.ALL)),
            run_id=queued.record.id,
            scope=Scope.ALL,
        )
        await drive_once(store, settings)
        for run_id in ids:
            record = (await service.get_run(run_id, scope=Scope.of(DEFAULT_TENANT))).record
            assert record.status == RunStatus.COMPLETED and record.tenant_id == DEFAULT_TENANT
        await fold(store.engine)
        assert await store.count_by_status(Scope.of(DEFAULT_TENANT)) == {"completed": 4}
    finally:
        await store.aclose()


# --- 0021: the fold's work in a narrow table --------------------------------------------------


async def test_0021_keeps_every_count_and_call_of_runs_folded_or_not_and_back(
    own_database: str,
) -> None:
    """Runs folded, not folded, retried after their fold (waiting, or finished again),
    billed after their fold, and suspended: the counts and usage read the same after a
    downgrade to 0020 and the upgrade back, before and after the fold, and the suspended
    run completes."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)

    async def move(run_id: str, *moves: Transition) -> None:
        for t in moves:
            events = (NewEvent(EventType.MODEL_CALLED, CALL),) if t == Transition.BILL else ()
            changed, _ = await store.apply(
                run_id, Change(t, events=events), datetime.now(UTC), scope=Scope.ALL
            )
            assert changed is not None, t

    completed = []
    for _ in range(3):
        view, _ = await service.create_run(run_body(model=TEXT_ONLY))
        assert await drive_once(store, settings) == RunStatus.COMPLETED
        completed.append(view.record.id)
    assert await fold(store.engine) == 3
    await move(completed[0], Transition.BILL)  # billed after its fold
    suspended = await suspended_run(service)
    retried = []
    for _ in range(2):
        view, _ = await service.create_run(run_body())
        await move(view.record.id, Transition.CLAIM, Transition.BILL, Transition.FAIL)
        retried.append(view.record.id)
    assert await fold(store.engine) == 3
    view, _ = await service.create_run(run_body(model=TEXT_ONLY))
    assert await drive_once(store, settings) == RunStatus.COMPLETED  # not folded
    await move(retried[0], Transition.RETRY)  # waits in the queue again
    await move(retried[1], Transition.RETRY, Transition.CLAIM, Transition.BILL)
    await move(retried[1], Transition.COMPLETE)
    counts = {"completed": 5, "queued": 1, "requires_action": 1}
    usage = await store.usage_totals(*DAY, scope=Scope.ALL)
    assert await store.count_by_status(scope=Scope.ALL) == counts
    await store.aclose()

    command.downgrade(alembic_config(own_database), "0020")
    engine = create_engine_sync(sync_url(own_database))
    with engine.connect() as conn:
        folded = dict(conn.execute(sa.text("SELECT id, counted_as FROM runs")).all())
    engine.dispose()
    assert folded[completed[1]] == "completed" and folded[view.record.id] is None
    upgrade_to_head(own_database)

    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    try:
        for _ in range(2):
            assert await store.usage_totals(*DAY, scope=Scope.ALL) == usage
            assert await store.count_by_status(scope=Scope.ALL) == counts
            await fold(store.engine)
        current = await service.get_run(suspended.record.id, scope=Scope.ALL)
        await service.submit_tool_results(
            results_for(current), run_id=suspended.record.id, scope=Scope.ALL
        )
        assert await drive_once(store, settings) == RunStatus.COMPLETED
        await fold(store.engine)
        assert await store.count_by_status(scope=Scope.ALL) == {"completed": 6, "queued": 1}
    finally:
        await store.aclose()


CALL = {
    "turn": 1,
    "provider": "scripted",
    "model": "demo",
    "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
    "cost_usd": 0.25,
}


# --- 0022: tool results kept as given -------------------------------------------------------


async def test_0022_keeps_answers_and_runs_queued_suspended_or_partly_answered_complete(
    own_database: str,
) -> None:
    """Runs queued, suspended and partly answered (an object output) before 0022 complete
    after it, the answer given before it still there; an answer given after it keeps its
    keys' order; and down to 0021 and back keeps them all."""
    settings = make_settings(own_database)
    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    try:
        partly = await suspended_run(service)
        suspended = await suspended_run(service)
        queued, _ = await service.create_run(run_body())
        first, second = partly.pending
        given = {"total": 3, "a": 1}
        body = ToolResultsIn.model_validate(
            {"results": [{"tool_call_id": first.call_id, "output": given}]}
        )
        await service.submit_tool_results(body, run_id=partly.record.id, scope=Scope.ALL)
    finally:
        await store.aclose()
    command.downgrade(alembic_config(own_database), "0021")
    upgrade_to_head(own_database)

    store = RunStore(create_async_engine(own_database))
    service = RunService(store, settings)
    try:
        (answer,) = [c for c in await store.tool_calls(partly.record.id) if c.result is not None]
        assert answer.result == {"output": given, "is_error": False}
        body = ToolResultsIn.model_validate(
            {"results": [{"tool_call_id": second.call_id, "output": {"z": 1, "b": 2}}]}
        )
        await service.submit_tool_results(body, run_id=partly.record.id, scope=Scope.ALL)
        rows = await store.tool_calls(partly.record.id)
        (late,) = [c for c in rows if c.call_id == second.call_id]
        assert list(late.result["output"]) == ["z", "b"]  # (as given, on either database)
        await service.submit_tool_results(
            results_for(suspended), run_id=suspended.record.id, scope=Scope.ALL
        )
        for _ in range(3):  # the two resumed runs complete; the queued one suspends
            await drive_once(store, settings)
        waiting = await service.get_run(queued.record.id, scope=Scope.ALL)
        assert waiting.record.status == RunStatus.REQUIRES_ACTION
        await service.submit_tool_results(
            results_for(waiting), run_id=queued.record.id, scope=Scope.ALL
        )
        assert await drive_once(store, settings) == RunStatus.COMPLETED
        for run_id in (partly.record.id, suspended.record.id, queued.record.id):
            assert (
                await service.get_run(run_id, scope=Scope.ALL)
            ).record.status == RunStatus.COMPLETED
    finally:
        await store.aclose()
