"""Wake-ups go out after the commit, coalesced: one NOTIFY per channel in flight."""

from __future__ import annotations

import asyncio

import psycopg
import pytest
from sqlalchemy.engine import make_url

from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import NOTIFY_CHANNEL, RunStore
from app.store.wakeups import Wakeups
from tests.helpers import drive_once, heard, results_for, run_body


async def test_pokes_during_a_send_fold_into_one_more_send() -> None:
    sent: list[str] = []
    gate = asyncio.Event()

    async def send(channel: str, payload: str = "") -> None:
        sent.append(channel)
        await gate.wait()

    wakeups = Wakeups(send)
    wakeups.poke("runs")
    await asyncio.sleep(0)  # the first send is in flight
    for _ in range(10):
        wakeups.poke("runs")
    wakeups.poke("webhooks")
    gate.set()
    await wakeups.flush()
    assert sent == ["runs", "runs", "webhooks"]


async def test_a_failed_send_does_not_stop_later_ones() -> None:
    sent: list[str] = []

    async def send(channel: str, payload: str = "") -> None:
        sent.append(channel)
        if len(sent) == 1:
            raise ConnectionError("database blip")

    wakeups = Wakeups(send)
    wakeups.poke("runs")
    await wakeups.flush()
    wakeups.poke("runs")
    await wakeups.flush()
    assert sent == ["runs", "runs"]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_burst_of_creates_wakes_the_workers_with_fewer_notifies(
    store: RunStore, settings: Settings, database_url: str
) -> None:
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    service = RunService(store, settings)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as listener:
        await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        await asyncio.gather(*[service.create_run(run_body()) for _ in range(50)])
        await store.flush_wakeups()
        received = [channel for channel, _ in await heard(listener, 1)]
    assert received and set(received) == {NOTIFY_CHANNEL}
    assert len(received) < 50


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_lone_write_that_makes_a_run_due_wakes_the_workers_at_its_own_commit(
    store: RunStore, settings: Settings, database_url: str
) -> None:
    """No other write of the process in flight: the NOTIFY is in the statement (its payload
    the run's id), so the listener hears it with the commit and nothing follows."""
    conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(False)
    service = RunService(store, settings)
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as listener:
        await listener.execute(f"LISTEN {NOTIFY_CHANNEL}")
        view, _ = await service.create_run(run_body())
        await drive_once(store, settings)
        suspended = await service.get_run(view.record.id, scope=Scope.ALL)
        outcome = await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        assert outcome.resumed
        await store.flush_wakeups()  # (any wake-up sent after the commit: none is)
        notes = await heard(listener, 2)
    # The create's and the resume's, each with its run: no empty post-commit wake-up.
    assert notes == [(NOTIFY_CHANNEL, view.record.id), (NOTIFY_CHANNEL, view.record.id)]
