"""The read statements of the store (runs, their logs, pending calls, events), built
once each and run on the direct pool on PostgreSQL: the API's hottest reads skip
SQLAlchemy's execution layer like the lifecycle's writes do."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.core.lifecycle import RunStatus
from app.store.schema import (
    CREATED,
    RUN_CREATED,
    created_beyond,
    newest_first,
    run_events,
    run_messages,
    runs,
    select_runs,
    tool_calls,
)


def log_of(run_id: Any) -> Any:
    """PostgreSQL: a run's log as one JSON array text (its batches in order), or NULL."""
    agg = sa.func.string_agg(
        run_messages.c.body,
        postgresql.aggregate_order_by(sa.literal_column("','"), run_messages.c.seq),
    )
    return (
        sa.select(sa.func.concat(sa.literal_column("'['"), agg, sa.literal_column("']'")))
        .where(run_messages.c.run_id == run_id)
        .scalar_subquery()
    )


class Queries:
    """The read statements, for one dialect, built on first use."""

    def __init__(self, is_postgres: bool) -> None:
        self.is_postgres = is_postgres
        self._cache: dict[Any, Any] = {}

    def _cached(self, key: Any, build: Any) -> Any:
        stmt = self._cache.get(key)
        if stmt is None:
            stmt = self._cache[key] = build()
        return stmt

    def by(self, column: str, *, with_log: bool = False) -> Any:
        """`SELECT runs.* WHERE <column> = :p_key` (PostgreSQL `with_log`: and its log)."""

        def build() -> Any:
            stmt = select_runs().where(runs.c[column] == sa.bindparam("p_key"))
            if with_log and self.is_postgres:
                stmt = stmt.add_columns(log_of(runs.c.id).label("log"))
            return stmt

        return self._cached(("by", column, with_log), build)

    def log(self) -> Any:
        """A run's log batches in order (the portable read)."""
        return self._cached(
            ("log",),
            lambda: (
                sa.select(run_messages.c.body)
                .where(run_messages.c.run_id == sa.bindparam("p_key"))
                .order_by(run_messages.c.seq)
            ),
        )

    def submission_read(self, column: str) -> Any:
        """A run and the calls of its pending round, in one query (PostgreSQL)."""

        def build() -> Any:
            pairs: list[Any] = []
            for c in tool_calls.columns:
                pairs += [sa.literal_column(f"'{c.name}'"), c]
            call = sa.func.jsonb_build_object(*pairs)
            calls = (
                sa.select(
                    sa.func.coalesce(
                        sa.func.jsonb_agg(
                            postgresql.aggregate_order_by(call, tool_calls.c.position)
                        ),
                        sa.literal_column("'[]'::jsonb"),
                    )
                )
                .where(
                    tool_calls.c.run_id == runs.c.id,
                    tool_calls.c.round == runs.c.waiting_reason["round"].as_integer(),
                )
                .scalar_subquery()
            )
            return (
                select_runs()
                .add_columns(calls.label("calls"))
                .where(runs.c[column] == sa.bindparam("p_key"))
            )

        return self._cached(("submission", column), build)

    # --- the API's reads ------------------------------------------------------------------

    def list_runs(self, status: RunStatus | None, paged: bool) -> Any:
        """Runs newest first, of one status or all, after a keyset cursor when `paged`."""

        def build() -> Any:
            # Of one status: that status's index on `runs` (ix_runs_waiting or
            # ix_runs_ended; running runs, which leases bound, by ix_runs_lease and a
            # sort), else all runs by the creation index of `run_configs`.
            on = CREATED if status is None else RUN_CREATED
            stmt = (
                select_runs()
                .order_by(*newest_first(on))
                .limit(sa.bindparam("p_limit", type_=sa.Integer()))
            )
            if status is not None:
                stmt = stmt.where(runs.c.status == sa.literal_column(f"'{status.value}'"))
            if paged:
                created = sa.bindparam("p_created", type_=runs.c.created_at.type)
                stmt = stmt.where(
                    created_beyond(
                        created, sa.bindparam("p_id", type_=sa.String()), ascending=False, on=on
                    )
                )
            return stmt

        return self._cached(("list", status, paged), build)

    def pending_calls(self) -> Any:
        """PostgreSQL: the calls of many runs' rounds (`p_ids`, `p_rounds` zipped)."""

        def build() -> Any:
            wanted = sa.select(
                sa.func.unnest(sa.bindparam("p_ids", type_=postgresql.ARRAY(sa.String()))),
                sa.func.unnest(sa.bindparam("p_rounds", type_=postgresql.ARRAY(sa.Integer()))),
            )
            return (
                tool_calls.select()
                .where(sa.tuple_(tool_calls.c.run_id, tool_calls.c.round).in_(wanted))
                .order_by(tool_calls.c.run_id, tool_calls.c.position)
            )

        return self._cached(("pending_calls",), build)

    def events(self) -> Any:
        """A run's events after a sequence number, in order, at most `p_limit`."""
        return self._cached(
            ("events",),
            lambda: (
                run_events.select()
                .where(
                    run_events.c.run_id == sa.bindparam("p_id", type_=sa.String()),
                    run_events.c.seq > sa.bindparam("p_after", type_=sa.Integer()),
                )
                .order_by(run_events.c.seq)
                .limit(sa.bindparam("p_limit", type_=sa.Integer()))
            ),
        )
