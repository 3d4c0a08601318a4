"""The store's side of busy conversations (`if_busy`, app.conversations): which
run continues a run, and the restart of a run that waited for its conversation.

A conversation is a chain: each continuing run writes `run.continued` on the run it
continues (even while that one is active: `if_busy` `enqueue`), so a run's successor is
the run its latest `run.continued` event names (one lookup on the events' primary key).
"""

from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.serde import SCHEMA_VERSION
from app.core.stored import Snapshot
from app.store.backend.base import NOTIFY_CHANNEL, Backend
from app.store.schema import Timestamp, run_events, run_messages, runs


@functools.cache
def successor_statement() -> Any:
    return (
        sa.select(run_events.c.data)
        .where(
            run_events.c.run_id == sa.bindparam("p_run", type_=sa.String()),
            run_events.c.type == E.RUN_CONTINUED.value,
        )
        .order_by(run_events.c.seq.desc())
        .limit(1)
    )


@functools.cache
def restart_statement() -> Any:
    """The waiting run gets its new state and is due now, if it still waits (queued, at
    the version read): a compare-and-set, as every write of a run."""
    return (
        runs.update()
        .where(
            runs.c.id == sa.bindparam("p_run", type_=sa.String()),
            runs.c.version == sa.bindparam("p_version", type_=sa.Integer()),
            runs.c.status == RunStatus.QUEUED.value,
        )
        .values(
            state=sa.bindparam("p_state", type_=sa.Text()),
            schema_version=SCHEMA_VERSION,
            version=runs.c.version + 1,
            available_at=sa.bindparam("p_now", type_=Timestamp),
            updated_at=sa.bindparam("p_now", type_=Timestamp),
            waiting_reason=sa.null(),
        )
        .returning(runs.c.id)
    )


class ConversationRows:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def successor(self, run_id: str) -> str | None:
        """The run that continues `run_id` (the latest to say so), if any."""
        row = await self.backend.fetch_one(successor_statement(), {"p_run": run_id})
        if row is None:
            return None
        value = row["data"].get("run_id")
        return value if isinstance(value, str) else None

    async def parked(self, beyond: datetime, limit: int = 100) -> list[tuple[str, str]]:
        """Queued runs parked for their conversation (due after `beyond`: an enqueue parks
        its run a century ahead) with the run each waits for: (waiting run, awaited run).
        Read from the queued runs' index; the sweep that starts the ones whose awaited run
        ended without starting them (a worker killed between its ending write and the
        start) reads these."""
        reason = runs.c.waiting_reason
        stmt = (
            sa.select(runs.c.id, reason["run_id"].as_string().label("awaited"))
            .where(
                runs.c.status == sa.literal_column(f"'{RunStatus.QUEUED.value}'"),
                runs.c.available_at > sa.bindparam("p_beyond", type_=Timestamp),
                reason["type"].as_string() == "conversation",
            )
            .limit(limit)
        )
        rows = await self.backend.fetch(stmt, {"p_beyond": beyond})
        return [(str(r["id"]), str(r["awaited"])) for r in rows if r["awaited"] is not None]

    async def restart(self, run_id: str, version: int, snapshot: Snapshot, now: datetime) -> bool:
        """Replace the state and log of a run that waited for its conversation (it was
        created with only its own messages) and make it due now; False when it no longer
        waits (cancelled, or restarted by another process)."""
        params = {"p_run": run_id, "p_version": version, "p_state": snapshot.control, "p_now": now}
        async with self.backend.transaction() as conn:
            done = (await conn.execute(restart_statement(), params)).first()
            if done is None:
                return False
            await conn.execute(run_messages.delete().where(run_messages.c.run_id == run_id))
            if snapshot.batch is not None:
                await conn.execute(
                    run_messages.insert().values(
                        run_id=run_id, seq=snapshot.batch.seq, body=snapshot.batch.body
                    )
                )
        self.backend.wake([(NOTIFY_CHANNEL, "")])
        return True
