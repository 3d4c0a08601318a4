"""Each dialect's statement forms and session settings (`Forms`, app.store.backend.base):
what the repositories that run their own SQLAlchemy statements (the fold, retention,
reports, gauges) need of the database they are on. Imports nothing of the store but the
latency buckets' constants, so any repository may use it; the backends hold theirs too."""

from __future__ import annotations

from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from app.store.backend.base import Forms
from app.store.latency import EPSILON, LAST, PER_DOUBLING


class PostgresForms:
    def insert(self, table: sa.Table) -> Any:
        return postgresql.insert(table)

    def for_update(self, stmt: Any) -> Any:
        return stmt.with_for_update()

    def skip_locked(self, stmt: Any, *of: sa.Table) -> Any:
        return stmt.with_for_update(skip_locked=True, of=list(of) or None)

    async def by_index(self, conn: AsyncConnection) -> None:
        """Read by index and without parallel workers, as the lifecycle's statements do
        (`app.store.backend.pg_direct.SESSION_SETTINGS`), for the rest of the transaction.
        The planner cannot estimate some partial indexes' predicates and took a read of a
        few entries for most of a table: it scanned `runs` whole, or launched workers for
        a few rows. (No JIT: a scan of a tiny table, which has no index worth reading,
        costs the disabled sequential scan's penalty, which took a plan past
        `jit_above_cost`: 0.9 s to compile a read of a few rows.)"""
        await conn.exec_driver_sql(
            "SELECT set_config('enable_seqscan', 'off', true),"
            " set_config('max_parallel_workers_per_gather', '0', true),"
            " set_config('jit', 'off', true)"
        )

    async def in_order(self, conn: AsyncConnection) -> None:
        await conn.exec_driver_sql("SELECT set_config('enable_bitmapscan', 'off', true)")

    #: `bytewise_ids` per database (its URL without the password): a collation is fixed
    #: when the column is made.
    _bytewise: ClassVar[dict[str, bool]] = {}

    async def snapshot(self, conn: AsyncConnection) -> None:
        await conn.execution_options(isolation_level="REPEATABLE READ")

    async def bytewise_ids(self, conn: AsyncConnection) -> bool:
        where = str(conn.engine.url)
        if where not in self._bytewise:
            self._bytewise[where] = await _compares_bytewise(conn)
        return self._bytewise[where]

    def seconds_since(self, at: Any, column: Any) -> sa.ColumnElement[Any]:
        return sa.extract("epoch", at - column)

    def hour_utc(self, column: Any) -> sa.ColumnElement[Any]:
        return sa.func.date_trunc("hour", column, "UTC")

    def latency_bucket(self, column: Any) -> sa.ColumnElement[Any] | None:
        # (As `bucket_of`: floor(8·log2(ms) + ε), at least 0, at most LAST.)
        log2 = sa.func.ln(sa.func.greatest(column, 1.0)) / sa.func.ln(2.0)
        steps = sa.func.floor(PER_DOUBLING * log2 + EPSILON)
        return sa.cast(sa.func.least(steps, LAST), sa.Integer)

    def json_text(self, column: Any, *path: str | int) -> sa.ColumnElement[Any]:
        value = sa.cast(column, postgresql.JSON)[tuple(map(str, path))]
        text: sa.ColumnElement[Any] = value.as_string()  # (`#>>`: an object's JSON text)
        return text


class SqliteForms:
    def insert(self, table: sa.Table) -> Any:
        return sqlite.insert(table)

    def for_update(self, stmt: Any) -> Any:
        return stmt  # (writers are serialized: the transaction holds the database)

    def skip_locked(self, stmt: Any, *of: sa.Table) -> Any:
        return stmt  # (writers are serialized: nothing to skip)

    async def by_index(self, conn: AsyncConnection) -> None:
        """(SQLite's planner reads the partial indexes as they are.)"""

    async def in_order(self, conn: AsyncConnection) -> None:
        """(SQLite's planner walks an index in order for an ORDER BY it holds.)"""

    async def snapshot(self, conn: AsyncConnection) -> None:
        """(Every transaction begins IMMEDIATE here: the fold cannot write meanwhile.)"""

    async def bytewise_ids(self, conn: AsyncConnection) -> bool:
        return True  # (the column's collation is BINARY)

    def seconds_since(self, at: Any, column: Any) -> sa.ColumnElement[Any]:
        return (sa.func.julianday(at) - sa.func.julianday(column)) * 86400.0

    def hour_utc(self, column: Any) -> sa.ColumnElement[Any]:
        return sa.func.strftime("%Y-%m-%d %H:00:00", column)  # (stored as UTC text)

    def latency_bucket(self, column: Any) -> sa.ColumnElement[Any] | None:
        return None  # (log2 is there only when SQLite was built with its math functions)

    def json_text(self, column: Any, *path: str | int) -> sa.ColumnElement[Any]:
        steps = "".join(f"[{p}]" if isinstance(p, int) else f'."{p}"' for p in path)
        return sa.func.json_extract(column, f"${steps}")


#: Pairs that a bytewise collation orders as given and a language's does not all: case
#: (`B` before `a`) and the characters after `9` and `Z` (`:` and `[`, which a language's
#: collation ignores or puts first).
BYTE_ORDER = (("run_B", "run_a"), ("run_9", "run_:"), ("run_Z", "run_["), ("run_z", "run_{"))


async def _compares_bytewise(conn: AsyncConnection) -> bool:
    """Whether `runs.id`'s collation (the column's own, else the database's default)
    orders `BYTE_ORDER`'s pairs as bytes do."""
    named = await conn.scalar(
        sa.text(
            "SELECT collation_name FROM information_schema.columns WHERE table_name = 'runs'"
            " AND column_name = 'id' AND table_schema = current_schema()"
        )
    )
    collate = "" if named is None else ' COLLATE "{}"'.format(str(named).replace('"', '""'))
    probes = " AND ".join(f"('{a}'{collate} < '{b}'{collate})" for a, b in BYTE_ORDER)
    return bool(await conn.scalar(sa.text(f"SELECT {probes}")))


POSTGRES, SQLITE = PostgresForms(), SqliteForms()


def forms_for(bind: AsyncEngine | AsyncConnection) -> Forms:
    """The forms of `bind`'s dialect."""
    name = bind.dialect.name
    if name == "postgresql":
        return POSTGRES
    if name == "sqlite":
        return SQLITE
    raise ValueError(f"unsupported database {name!r}")
