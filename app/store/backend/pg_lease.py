"""PostgreSQL's lease of a queue's calls: one statement (`app.toolqueue.sql` says what a
lease does)."""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa

from app.core.events import EventType as E
from app.store.backend.base import EVENTS_CHANNEL
from app.store.backend.leases import leasable_calls
from app.store.backend.pg_statements import notify_each
from app.store.schema import Timestamp, run_events, runs, tool_calls

tc = tool_calls


def _object(**fields: Any) -> Any:
    """`jsonb_build_object` of the fields, in order."""
    return sa.func.jsonb_build_object(*[x for kv in fields.items() for x in kv])


@functools.cache
def lease_statement() -> Any:
    """One statement: pick, lease, move each run's token and event count on, append
    the events, notify live streams of watched runs; returns the leased calls."""
    picked = leasable_calls().with_for_update(skip_locked=True, of=[tc, runs]).cte("picked")
    nonce = sa.func.replace(sa.cast(sa.func.gen_random_uuid(), sa.Text), "-", "")
    leased = (
        tc.update()
        .where(
            tc.c.run_id == picked.c.run_id,
            tc.c.round == picked.c.round,
            tc.c.position == picked.c.position,
        )
        .values(
            lease_owner=sa.bindparam("p_owner", type_=sa.String()),
            lease_token=nonce,
            lease_expires_at=sa.bindparam("p_until", type_=Timestamp),
            attempts=tc.c.attempts + 1,
        )
        .returning(*tc.c)
        .cte("leased")
    )
    weight = sa.case((leased.c.attempts > 1, 2), else_=1)  # events per call
    counted = (
        sa.select(leased.c.run_id, sa.func.sum(weight).label("n"))
        .group_by(leased.c.run_id)
        .cte("counted")
    )
    bumped = (
        runs.update()
        .where(runs.c.id == counted.c.run_id)
        .values(
            version=runs.c.version + 1,
            last_event_seq=runs.c.last_event_seq + counted.c.n,
        )
        .returning(runs.c.id, runs.c.last_event_seq, counted.c.n)
        .cte("bumped")
    )
    order = (leased.c.round, leased.c.position)
    numbered = (
        sa.select(
            leased,
            picked.c.lease_owner.label("previous_owner"),
            picked.c.offered,
            (
                bumped.c.last_event_seq
                - bumped.c.n
                + sa.func.sum(weight).over(partition_by=leased.c.run_id, order_by=order)
            ).label("seq"),
        )
        .select_from(
            leased.join(bumped, bumped.c.id == leased.c.run_id).join(
                picked,
                sa.and_(
                    picked.c.run_id == leased.c.run_id,
                    picked.c.round == leased.c.round,
                    picked.c.position == leased.c.position,
                ),
            )
        )
        .cte("numbered")
    )
    now = sa.bindparam("p_now", type_=Timestamp)
    n = numbered.c
    rows = sa.union_all(
        sa.select(
            n.run_id,
            n.seq,
            sa.literal(E.TOOL_CALL_LEASED.value),
            _object(
                tool_call_id=n.call_id,
                round=n.round,
                queue=n.queue,
                executor=n.lease_owner,
                attempt=n.attempts,
                lease_expires_at=sa.bindparam("p_until_iso", type_=sa.String()),
            ),
            sa.null(),
            now,
        ),
        sa.select(
            n.run_id,
            n.seq - 1,
            sa.literal(E.TOOL_CALL_LEASE_EXPIRED.value),
            _object(
                tool_call_id=n.call_id,
                round=n.round,
                attempt=n.attempts - 1,
                executor=n.previous_owner,
            ),
            sa.null(),
            now,
        ).where(n.attempts > 1),
    )
    appended = run_events.insert().from_select(
        ["run_id", "seq", "type", "data", "actor", "created_at"], rows
    )
    return (
        sa.select(*[numbered.c[c.name] for c in tc.columns])
        .add_columns(notify_each(EVENTS_CHANNEL, bumped, watched_only=True).label("notified"))
        .add_cte(appended.cte("appended"))
        .order_by(numbered.c.offered, numbered.c.run_id, numbered.c.round, numbered.c.position)
    )
