"""A queue's in-flight limit (`AGENTRUN_QUEUE_LIMITS`, `max_in_flight`) in the lease
statement: never more of its calls under a live lease than the limit, on both back ends,
and on PostgreSQL not even when many processes lease at once."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta

import pytest

from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.toolqueue.sql import ToolCallQueue
from tests.helpers import counts_at_once, suspended_run


def queue(store: RunStore) -> ToolCallQueue:
    """The queue's SQL over `store`'s backend (`app.toolqueue.sql`)."""
    return ToolCallQueue(store.backend)


def later(seconds: float) -> datetime:
    return datetime.now(UTC) + timedelta(seconds=seconds)


async def offered(store: RunStore, settings: Settings, runs: int) -> None:
    """`runs` suspended runs, two calls each, in queue `gpu`."""
    service = RunService(store, settings)
    for _ in range(runs):
        await suspended_run(service, tool_queue="gpu")


async def test_a_lease_hands_out_no_more_than_the_limit(
    store: RunStore, settings: Settings
) -> None:
    await offered(store, settings, 3)
    first = await queue(store).lease_calls("gpu", "ex-1", later(0), later(30), 10, max_in_flight=4)
    assert len(first) == 4
    assert (
        await queue(store).lease_calls("gpu", "ex-2", later(0), later(30), 10, max_in_flight=4)
        == []
    )
    unlimited = await queue(store).lease_calls("gpu", "ex-3", later(0), later(30), 10)
    assert len(unlimited) == 2  # (no limit given: the rest)
    # Lapsed leases are not in flight: past their expiry, four may go again.
    again = await queue(store).lease_calls("gpu", "ex-4", later(60), later(90), 10, max_in_flight=4)
    assert len(again) == 4


async def test_answered_calls_free_their_place(store: RunStore, settings: Settings) -> None:
    await offered(store, settings, 2)
    leased = await queue(store).lease_calls("gpu", "ex-1", later(0), later(30), 10, max_in_flight=2)
    assert len(leased) == 2 and leased[0].run_id == leased[1].run_id
    service = RunService(store, settings)
    from app.service.schemas import ToolResultsIn

    body = ToolResultsIn.model_validate(
        {"results": [{"tool_call_id": c.call_id, "output": "3"} for c in leased]}
    )
    await service.submit_tool_results(body, run_id=leased[0].run_id, scope=Scope.ALL)
    more = await queue(store).lease_calls("gpu", "ex-2", later(0), later(30), 10, max_in_flight=2)
    assert len(more) == 2 and more[0].run_id != leased[0].run_id


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_concurrent_leases_from_many_processes_never_overshoot(
    store: RunStore, settings: Settings, database_url: str
) -> None:
    await offered(store, settings, 12)  # 24 calls
    others = [RunStore(create_engine(database_url)) for _ in range(6)]  # one pool each
    try:
        for round_ in range(3):
            now = later(100 * round_)  # each round: the previous round's leases lapsed
            leases = [
                queue(s).lease_calls(
                    "gpu", f"ex-{i}", now, now + timedelta(seconds=30), 3, "default", 5
                )
                for i, s in enumerate(others * 2)
            ]
            got = [c for batch in await asyncio.gather(*leases) for c in batch]
            assert len(got) == 5, f"round {round_}: {len(got)} in flight"
            assert len({(c.run_id, c.position) for c in got}) == 5
    finally:
        for s in others:
            await s.aclose()


LEASER = """
import asyncio, os, sys
from datetime import UTC, datetime, timedelta
from app.store.backend.engines import create_engine
from app.store.runs import RunStore
from app.toolqueue.sql import ToolCallQueue

async def main() -> None:
    store = RunStore(create_engine(sys.argv[1]))
    queue = ToolCallQueue(store.backend)
    await queue.next_offer("gpu")  # connected: the lease below is all that is left
    print("ready", flush=True)
    sys.stdin.readline()
    now = datetime.now(UTC)
    until = now + timedelta(seconds=30)
    calls = await queue.lease_calls("gpu", f"p{os.getpid()}", now, until, 3, "default", 5)
    print(len(calls), flush=True)
    await store.aclose()

asyncio.run(main())
"""


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_leases_from_many_processes_never_overshoot(
    store: RunStore, settings: Settings, database_url: str
) -> None:
    """Real processes, each with its own pool, told to lease at the same moment."""
    await offered(store, settings, 8)  # 16 calls
    counts = counts_at_once(LEASER, [database_url], 5)
    assert sum(counts) == 5, counts


def test_queue_limits_are_validated_at_start(database_url: str) -> None:
    ok = Settings(database_url=database_url, queue_limits={"gpu": {"max_in_flight": 2}})
    assert ok.max_in_flight("gpu") == 2 and ok.max_in_flight("cpu") is None
    for bad, named in [
        ({"gpu": {"max_in_flight": 0}}, "queue_limits['gpu'].max_in_flight"),
        ({"gpu": {"max_inflight": 2}}, "queue_limits['gpu']: unknown ['max_inflight']"),
        ({"a/b": {"max_in_flight": 2}}, "queue_limits: 'a/b' is not a queue name"),
    ]:
        with pytest.raises(ValueError, match=re.escape(named)):
            Settings(database_url=database_url, queue_limits=bad)
