"""PostgreSQL hot path: the lifecycle's statements run on psycopg directly.

SQLAlchemy still builds every statement (one source of the SQL, shared with SQLite); this
module compiles it once to text with `$n` placeholders and runs it on a psycopg pool in
autocommit through a raw cursor. Per
statement that costs about a quarter of the client CPU of SQLAlchemy's async execution
(measured in bench/lifecycle.py's notes), and on this box CPU is the bottleneck.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import psycopg
import sqlalchemy as sa
from psycopg.types.json import set_json_loads
from psycopg_pool import AsyncConnectionPool
from sqlalchemy.engine import URL, Dialect


@dataclass(frozen=True, slots=True)
class Compiled:
    """A statement as text with `$n` placeholders (psycopg's raw cursor: no query
    parsing per execution) and how to fill each from the caller's values or from the
    constants SQLAlchemy bound itself (`version + 1`…)."""

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


async def _configure(conn: psycopg.AsyncConnection[Any]) -> None:
    set_json_loads(orjson.loads, conn)


class DirectPool:
    """A psycopg pool in autocommit, opened on first use (inside the running loop)."""

    def __init__(self, url: URL, max_size: int) -> None:
        conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.pool = AsyncConnectionPool(
            conninfo,
            min_size=1,
            max_size=max(1, max_size),
            # Every statement here is keyed by a unique column or is the claim (served
            # by its partial index), so a generic plan is right for all of them, and
            # re-planning a CTE per execution costs more than executing it.
            kwargs={"autocommit": True, "options": "-c plan_cache_mode=force_generic_plan"},
            configure=_configure,
            open=False,
        )
        self._opened = False

    async def _ensure_open(self) -> None:
        if not self._opened:
            await self.pool.open()
            self._opened = True

    async def fetchone(self, compiled: Compiled, values: Mapping[str, Any]) -> Any:
        """The first row (a tuple) of one autocommit statement that returns rows, or
        None. (Not `cursor.description`: building it costs more than the fetch.)"""
        await self._ensure_open()
        async with self.pool.connection() as conn:
            cursor = psycopg.AsyncRawCursor(conn)
            await cursor.execute(compiled.sql, compiled.params(values))
            return await cursor.fetchone()

    async def fetchall(self, compiled: Compiled, values: Mapping[str, Any]) -> list[Any]:
        await self._ensure_open()
        async with self.pool.connection() as conn:
            cursor = psycopg.AsyncRawCursor(conn)
            await cursor.execute(compiled.sql, compiled.params(values))
            return await cursor.fetchall()

    async def aclose(self) -> None:
        if self._opened:
            await self.pool.close()
            self._opened = False
