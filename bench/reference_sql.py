"""The lifecycle benchmark's references: the performance notes' SQL lifecycle issued
directly with psycopg (the ceiling), and the service's own statements, recorded from one
real lifecycle and replayed on its pool with no service around them."""

from __future__ import annotations

import asyncio
import secrets
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402

from app.core.scope import Scope  # noqa: E402
from app.service.runs import RunService  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.backend.pg_direct import Compiled, DirectPool  # noqa: E402
from bench.common import (  # noqa: E402
    Meter,
    run_with_history,
)
from tests.helpers import drive_once, results_for, run_body  # noqa: E402


async def direct_sql(url: str, lifecycles: int, clients: int) -> dict[str, float]:
    """The notes' six-commit lifecycle, issued directly with psycopg; per-lifecycle
    figures (every lifecycle counted has reached `completed`)."""
    # A real serialized run as the payload (10 messages, ≈ 2.3 kB, what the service's
    # suspended runs hold), not a string that compresses to nothing.
    state = run_with_history(10).to_json()
    remaining = lifecycles
    conns = [await psycopg.AsyncConnection.connect(url, autocommit=True) for _ in range(clients)]

    async def client(conn: psycopg.AsyncConnection[Any]) -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await conn.execute(
                "INSERT INTO bench_runs (status, state) VALUES ('queued', %s)", (state,)
            )
            for final in ("requires_action", "completed"):
                cur = await conn.execute(
                    """UPDATE bench_runs SET status='running', worker_id='w',
                         attempt=attempt+1, updated_at=now()
                       WHERE id = (SELECT id FROM bench_runs WHERE status='queued'
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING id"""
                )
                row = await cur.fetchone()
                if row is None:
                    continue
                await conn.execute(
                    "UPDATE bench_runs SET status=%s, state=%s, worker_id=NULL WHERE id=%s",
                    (final, state, row[0]),
                )
                if final == "requires_action":
                    await conn.execute(
                        """UPDATE bench_runs SET status='queued', tool_results=%s
                           WHERE id=%s AND status='requires_action'""",
                        ('{"r": "3"}', row[0]),
                    )

    meter = Meter(url)
    await asyncio.gather(*[client(conn) for conn in conns])
    result = meter.stop(lifecycles)
    for conn in conns:
        await conn.close()
    return result


Statement = tuple[Compiled, dict[str, Any]]


async def record_statements(service: RunService) -> dict[str, Statement]:
    """The service's own statements for one lifecycle, as its direct pool sends them
    (text and values), by role: one run driven in this process, its statements recorded
    step by step, so each role is told by the step that sent it (not by a function's
    name in its text, which changes with the store's statements)."""
    sent: dict[str, list[tuple[str, Compiled, dict[str, Any]]]] = {}
    step = "create"
    fetchone, fetchall = DirectPool.fetchone, DirectPool.fetchall

    async def one(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.setdefault(step, []).append(("one", compiled, dict(values)))
        return await fetchone(self, compiled, values)

    async def many(self: DirectPool, compiled: Compiled, values: Any) -> Any:
        sent.setdefault(step, []).append(("many", compiled, dict(values)))
        return await fetchall(self, compiled, values)

    DirectPool.fetchone, DirectPool.fetchall = one, many  # type: ignore[method-assign]
    try:
        view, _ = await service.create_run(run_body())
        step = "suspend"
        await drive_once(service.store, service.settings)
        step = "answers"
        suspended = await service.get_run(view.record.id, scope=Scope.ALL)
        step = "submit"
        await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        step = "complete"
        await drive_once(service.store, service.settings)
        await service.store.flush_wakeups()
    finally:
        DirectPool.fetchone, DirectPool.fetchall = fetchone, fetchall  # type: ignore[method-assign]

    def only(step: str, role: str, kind: str, write: bool) -> Statement:
        """The one statement of `kind` (`one`/`many`) that `step` sent, a change or a read."""
        texts = [(k, " ".join(c.sql.split()), c, v) for k, c, v in sent.get(step, [])]
        found = [
            (c, v)
            for k, sql, c, v in texts
            if k == kind
            and sql.startswith("WITH changed AS (UPDATE") == write
            and "service_secrets" not in sql  # (the callback key, read once per process)
        ]
        if len(found) != 1:
            seen = [sql[:60] for _, sql, _, _ in texts]
            raise RuntimeError(f"{role}: not one such statement in the {step} step: {seen}")
        return found[0]

    creates = [(c, v) for _, c, v in sent.get("create", []) if "INSERT INTO runs " in c.sql]
    if len(creates) != 1:
        raise RuntimeError(f"create: expected one INSERT INTO runs, got {len(creates)}")
    return {
        "create": creates[0],
        "claim": only("suspend", "claim", "many", write=True),
        "suspend": only("suspend", "suspend", "one", write=True),
        "read": only("submit", "read", "one", write=False),
        "submit": only("submit", "submit", "one", write=True),
        "complete": only("complete", "complete", "one", write=True),
    }


async def own_statements(
    url: str, script: dict[str, Statement], lifecycles: int, clients: int
) -> dict[str, float]:
    """The service's own statements (recorded by `record_statements`) issued directly on a
    direct pool by `clients` concurrent clients: what the database does with this work
    when no Python service runs around it. Each client creates a run, then claims whatever
    is due and takes it one step: a new run suspends (its results are read and written at
    once), a resumed one completes."""
    engine = create_engine(url, pool_size=clients)
    pool = DirectPool(engine)
    target = created = completed = 0

    def statement(role: str, **values: Any) -> tuple[Compiled, dict[str, Any]]:
        compiled, recorded = script[role]
        if recorded.get("v_callback_token_hash"):  # unique per run
            values.setdefault("v_callback_token_hash", secrets.token_hex(32))
        now = datetime.now(UTC)  # as recorded, a resumed run would be due in the past
        times = {k: now for k in ("p_now", "v_available_at", "v_updated_at") if k in recorded}
        return compiled, {**recorded, **times, **values}

    async def write(role: str, **values: Any) -> Any:
        row = await pool.fetchone(*statement(role, **values))
        if row is None or row["id"] is None:
            raise RuntimeError(f"{role} was refused: the replay lost track of its run")
        return row

    async def client() -> None:
        nonlocal created, completed
        progress = time.monotonic()
        while completed < target:
            if created < target:
                created += 1
                await write("create", v_id=f"run_{secrets.token_hex(10)}")
            claimed = await pool.fetchall(*statement("claim"))
            if not claimed:
                if time.monotonic() - progress > 30:
                    raise RuntimeError("no run came due for 30 s: the replay is stuck")
                await asyncio.sleep(0.001)
                continue
            progress = time.monotonic()
            run_id, held = claimed[0]["id"], claimed[0]["version"]
            if claimed[0]["turn"] == 0:
                await write("suspend", p_id=run_id, p_version=held)
                row = await pool.fetchone(*statement("read", p_key=run_id))
                await write("submit", p_id=run_id, p_version=row["version"])
            else:
                await write("complete", p_id=run_id, p_version=held)
                completed += 1

    async def batch(n: int) -> None:
        nonlocal target, created, completed
        target, created, completed = n, 0, 0
        await asyncio.gather(*[client() for _ in range(clients)])

    await batch(lifecycles // 4)  # connect, warm up
    meter = Meter(url)
    await batch(lifecycles)
    result = meter.stop(completed)
    await pool.aclose()
    await engine.dispose()
    return result
