"""The PostgreSQL backend's read statements (a run with its log, a submission's read, the
calls of many rounds) and the watchers' upsert: built once per shape, cached, as the
changes' (`app.store.backend.pg_statements`)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from app.store.schema import run_messages, run_watchers, runs, select_runs, tool_calls
from app.store.sql.reads import of_tenant, run_by


class StatementCache:
    """Statements built on first use, by a key of their shape."""

    def __init__(self) -> None:
        self._cache: dict[Hashable, Any] = {}

    def _cached(self, key: Hashable, build: Callable[[], Any]) -> Any:
        stmt = self._cache.get(key)
        if stmt is None:
            stmt = self._cache[key] = build()
        return stmt


def log_of(run_id: Any) -> Any:
    """A run's log as one JSON array text (its batches in order), or NULL."""
    agg = sa.func.string_agg(
        run_messages.c.body,
        postgresql.aggregate_order_by(sa.literal_column("','"), run_messages.c.seq),
    )
    return (
        sa.select(sa.func.concat(sa.literal_column("'['"), agg, sa.literal_column("']'")))
        .where(run_messages.c.run_id == run_id)
        .scalar_subquery()
    )


def calls_of(run_id: Any, round: Any) -> Any:
    """The calls of a run's round as one JSON array of rows (`ToolCallRecord.from_row`
    reads each), in order; empty when it has none. `json`, not `jsonb`: a result's keys
    stay in the order they were given (`tool_calls.result`)."""
    pairs: list[Any] = []
    for c in tool_calls.columns:
        pairs += [sa.literal_column(f"'{c.name}'"), c]
    call = sa.func.json_build_object(*pairs)
    return (
        sa.select(
            sa.func.coalesce(
                sa.func.json_agg(postgresql.aggregate_order_by(call, tool_calls.c.position)),
                sa.literal_column("'[]'::json"),
            )
        )
        .where(tool_calls.c.run_id == run_id, tool_calls.c.round == round)
        .scalar_subquery()
    )


class PgReads(StatementCache):
    """The read statement of each shape, built on first use."""

    def by(self, column: str, scoped: bool = False) -> Any:
        """A run by a unique column (`p_key`; `scoped`: of tenant `p_tenant`), with its log."""
        return self._cached(
            ("by", column, scoped),
            lambda: run_by(column, scoped).add_columns(log_of(runs.c.id).label("log")),
        )

    def submission_read(self, column: str, scoped: bool = False) -> Any:
        """A run (of tenant `p_tenant` when `scoped`) and the calls of its pending round,
        in one query."""

        def build() -> Any:
            calls = calls_of(runs.c.id, runs.c.waiting_reason["round"].as_integer())
            stmt = (
                select_runs()
                .add_columns(calls.label("calls"))
                .where(runs.c[column] == sa.bindparam("p_key"))
            )
            return stmt.where(of_tenant()) if scoped else stmt

        return self._cached(("submission", column, scoped), build)

    def calls_of_rounds(self) -> Any:
        """The calls of many runs' rounds (`p_ids`, `p_rounds` zipped)."""

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

        return self._cached(("calls_of_rounds",), build)

    def watch(self) -> Any:
        """Upsert watches of `p_ids` by `p_watcher` for `p_ttl` seconds (database clock)."""

        def build() -> Any:
            expires = sa.func.now() + sa.func.make_interval(
                0, 0, 0, 0, 0, 0, sa.bindparam("p_ttl", type_=sa.Float())
            )
            insert = postgresql.insert(run_watchers).from_select(
                ["run_id", "watcher", "expires_at"],
                sa.select(
                    sa.func.unnest(sa.bindparam("p_ids", type_=postgresql.ARRAY(sa.String()))),
                    sa.bindparam("p_watcher", type_=sa.String()),
                    expires,
                ),
            )
            return insert.on_conflict_do_update(
                index_elements=["run_id", "watcher"],
                set_={"expires_at": insert.excluded.expires_at},
            )

        return self._cached(("watch",), build)
