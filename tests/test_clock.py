"""One clock, passed in (`app.clock`): nothing else in `app` reads the system's time, so
a `FakeClock` moved forward is what every part sees, without a test sleeping."""

from __future__ import annotations

import ast
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from app.clock import SYSTEM_CLOCK, FakeClock
from app.core.lifecycle import KeyState, RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from app.tenancy.identities import Identities
from app.tenancy.keys import DbKeys, KeyAdmin
from tests.helpers import run_body, running_worker, wait_status

APP = Path(__file__).resolve().parent.parent / "app"
CLOCK_MODULE = APP / "clock.py"

#: `module.attribute` reads of the system clock, called or passed along (`clock=time.time`).
READS = {
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "time_ns"),
    ("time", "monotonic"),
    ("time", "monotonic_ns"),
    ("time", "perf_counter"),
    ("time", "perf_counter_ns"),
}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def clock_reads(source: str) -> list[tuple[int, str]]:
    """(line, what) of each direct read of the system clock in `source`: `datetime.now`
    and friends (also as `datetime.datetime.now`), `time.time` and friends, imports of
    those names from `time`, and any `X.time()` call without arguments (`loop.time()`)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            owner = _dotted(node.value)
            if owner is not None and (owner.rsplit(".", 1)[-1], node.attr) in READS:
                found.append((node.lineno, f"{owner}.{node.attr}"))
        if isinstance(node, ast.ImportFrom) and node.module in {"time", "datetime"}:
            for alias in node.names:
                if (node.module, alias.name) in READS:
                    found.append((node.lineno, f"from {node.module} import {alias.name}"))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "time"
            and not node.args
            and not node.keywords
            and _dotted(node.func.value) != "time"  # (time.time: found above)
        ):
            found.append((node.lineno, f"{ast.unparse(node.func)}()"))
    return sorted(found)


def test_the_checker_finds_each_kind_of_read() -> None:
    source = (
        "import time, datetime as dt\n"
        "from datetime import datetime, date\n"
        "from time import monotonic\n"
        "a = datetime.now(UTC)\n"
        "b = dt.datetime.utcnow()\n"
        "c = date.today()\n"
        "d = time.perf_counter()\n"
        "e = asyncio.get_running_loop().time()\n"
        "def f(clock=time.time): pass\n"
        "g = loop.time()\n"
        "h = clock.now(); i = clock.monotonic(); j = datetime.fromtimestamp(0)\n"
    )
    lines = [line for line, _ in clock_reads(source)]
    assert lines == [3, 4, 5, 6, 7, 8, 9, 10]


def test_nothing_in_app_reads_the_system_clock_but_app_clock() -> None:
    found = [
        f"{path.relative_to(APP.parent)}:{line}: {what}"
        for path in sorted(APP.rglob("*.py"))
        if path != CLOCK_MODULE
        for line, what in clock_reads(path.read_text())
    ]
    assert not found, "read the clock passed in (app.clock), not the system's:\n" + "\n".join(found)


def test_a_fake_clock_moves_only_when_told() -> None:
    start = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)
    clock = FakeClock(start, monotonic=100.0)
    assert (clock.now(), clock.epoch(), clock.monotonic()) == (start, start.timestamp(), 100.0)
    clock.advance(timedelta(minutes=1))
    clock.advance(0.5)
    assert clock.now() == start + timedelta(seconds=60.5)
    assert clock.monotonic() == 160.5
    clock.set(start - timedelta(days=1))  # a wall-clock jump back: monotonic holds
    assert (clock.now(), clock.monotonic()) == (start - timedelta(days=1), 160.5)
    with pytest.raises(ValueError):
        clock.advance(-1)
    with pytest.raises(ValueError):
        FakeClock(datetime(2030, 1, 1))


def test_the_system_clock_is_aware_utc() -> None:
    assert SYSTEM_CLOCK.now().tzinfo is UTC
    assert abs(SYSTEM_CLOCK.epoch() - SYSTEM_CLOCK.now().timestamp()) < 60


async def test_a_fake_clock_moved_on_expires_a_suspended_run_and_a_key(
    store: RunStore, settings: Settings
) -> None:
    """One FakeClock, handed to the service, the worker and the keys: moved two hours on
    (no sleep), the worker's sweep expires the run the driver stamped with it, and the
    key its expiry has passed is refused and shown expired."""
    clock = FakeClock()
    service = RunService(store, settings, clock)
    identities = Identities(store.backend)
    admin = KeyAdmin(identities, clock)
    keys = DbKeys(identities, [], open_allowed=False, clock=clock)
    issued = await admin.create("default", "viewer", "k", expires_in=timedelta(minutes=30))
    view, _ = await service.create_run(run_body(expires_in=3600))
    assert view.record.created_at == clock.now()
    async with running_worker(store, settings, clock=clock):
        suspended = await wait_status(service, view.record.id, RunStatus.REQUIRES_ACTION)
        assert suspended.record.expires_at == clock.now() + timedelta(hours=1)
        assert await keys.authenticate(issued.secret) is not None
        clock.advance(timedelta(hours=2))
        assert await keys.authenticate(issued.secret) is None
        assert (await admin.get(issued.key.id, Scope.ALL)).state() is KeyState.EXPIRED
        expired = await wait_status(service, view.record.id, RunStatus.EXPIRED)
    assert expired.record.error == {"type": "expired", "message": "the run waited past expires_at"}
