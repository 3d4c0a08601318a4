"""PostgreSQL hot path: the lifecycle's statements run on asyncpg directly.

SQLAlchemy still builds every statement (one source of the SQL, shared with SQLite); this
module compiles it once to text with `$n` placeholders and runs it, as its own autocommit
statement, on an asyncpg pool (prepared and cached per connection). Measured on this box
for one run transition: 0.09 ms of client CPU, against 0.28 ms through psycopg's raw
cursor and about 0.8 ms through SQLAlchemy's async engine; CPU is what limits throughput
here (README, lifecycle benchmark). The rest of the store keeps SQLAlchemy and psycopg.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import orjson
import sqlalchemy as sa
from sqlalchemy.engine import URL, Dialect


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as text with `$n` placeholders and how to fill each from the caller's
    values or from the constants SQLAlchemy bound itself (`version + 1`…)."""

    sql: str
    # Per placeholder: its name, whether the value goes as JSON text, and whether it is
    # a constant (then the last item is its value).
    slots: tuple[tuple[str, bool, bool, Any], ...]

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        return [
            constant if fixed else _json(values[name]) if json else values[name]
            for name, json, fixed, constant in self.slots
        ]


def _json(value: Any) -> str:
    # As SQLAlchemy's JSON type does by default, None is stored as JSON null.
    return orjson.dumps(value).decode()


_PLACEHOLDER = re.compile(r"%\((\w+)\)s|%%")


def compile_statement(stmt: Any, dialect: Dialect) -> Compiled:
    compiled = stmt.compile(dialect=dialect)
    constants: dict[str, Any] = {}
    json_names: set[str] = set()
    for bind, name in compiled.bind_names.items():
        if not bind.required:
            constants[name] = bind.effective_value
        if isinstance(bind.type.dialect_impl(dialect), sa.JSON):
            json_names.add(name)
    for name in json_names & constants.keys():
        constants[name] = _json(constants[name])
    names: list[str] = []

    def number(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:  # an escaped literal percent sign
            return "%"
        if name not in names:
            names.append(name)
        return f"${names.index(name) + 1}"

    sql = _PLACEHOLDER.sub(number, compiled.string)
    slots = tuple(
        (name, name in json_names, name in constants, constants.get(name)) for name in names
    )
    return Compiled(sql, slots)


async def _init(conn: Any) -> None:
    # JSON parameters arrive as text already (see Compiled); results decode with orjson.
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, encoder=str, decoder=orjson.loads, schema="pg_catalog")


#: The pool's session settings (see DirectPool).
SESSION_SETTINGS = {"plan_cache_mode": "force_generic_plan", "enable_seqscan": "off"}


async def _keep(conn: Any) -> None:
    """Connections go back to the pool as they are: these statements leave no session
    state (no locks, cursors, LISTEN or SET), and asyncpg's default reset costs a round
    trip per statement."""


class DirectPool:
    """An asyncpg pool, created on first use (inside the running loop). Every statement
    is planned generically: each is keyed by a unique column or is the claim (served by
    its partial index), and re-planning a CTE per execution costs more than running it.
    Sequential scans are off for the same reason: a plan made while a table was empty
    (a new deployment's tool_calls, say) would otherwise scan it on every execution for
    the connection's life, however large it grew: the performance notes' sticky plan."""

    def __init__(self, url: URL, max_size: int) -> None:
        self.dsn = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.max_size = max(1, max_size)
        self._pool: asyncio.Future[Any] | None = None

    async def _acquire_pool(self) -> Any:
        if self._pool is None:
            self._pool = asyncio.ensure_future(
                asyncpg.create_pool(
                    self.dsn,
                    min_size=1,
                    max_size=self.max_size,
                    init=_init,
                    reset=_keep,
                    server_settings=SESSION_SETTINGS,
                )
            )
        try:
            return await asyncio.shield(self._pool)
        except Exception:
            self._pool = None  # the next call tries again (the database may be back)
            raise

    async def fetchone(self, compiled: Compiled, values: Mapping[str, Any]) -> Any:
        """The first row (a tuple) of one autocommit statement, or None."""
        pool = await self._acquire_pool()
        async with pool.acquire() as conn:
            row = await conn.fetchrow(compiled.sql, *compiled.params(values))
        return tuple(row) if row is not None else None

    async def fetchall(self, compiled: Compiled, values: Mapping[str, Any]) -> list[Any]:
        pool = await self._acquire_pool()
        async with pool.acquire() as conn:
            rows = await conn.fetch(compiled.sql, *compiled.params(values))
        return [tuple(row) for row in rows]

    async def aclose(self) -> None:
        if self._pool is not None:
            pending, self._pool = self._pool, None
            with contextlib.suppress(Exception):
                await (await pending).close()
