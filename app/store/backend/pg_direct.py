"""PostgreSQL hot path: the lifecycle's statements run on asyncpg directly.

SQLAlchemy still builds every statement (one source of the SQL, shared with SQLite); this
module compiles it once to text with `$n` placeholders and runs it, as its own autocommit
statement, on a raw asyncpg connection borrowed from the engine's pool (prepared and
cached per connection), skipping SQLAlchemy's execution layer: CPU is what limits
throughput here (docs/benchmarks.md, the lifecycle; `bench/statement_cpu.py` measures the
paths). The process has that one pool (README, "Connection budget").
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]
import orjson
import sqlalchemy as sa
import sqlalchemy.exc
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry, Pool, PoolProxiedConnection, QueuePool
from sqlalchemy.util import await_, greenlet_spawn

from app.clock import SYSTEM_CLOCK
from app.store.backend.engines import transaction_pooled


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


#: The text is compiled for psycopg's `%(name)s` style whatever the engine's driver (the
#: SQL is the same PostgreSQL; only the placeholders differ, and they are renumbered here).
_PYFORMAT: Dialect = postgresql.psycopg.dialect()  # type: ignore[no-untyped-call]


def compile_statement(stmt: Any, dialect: Dialect) -> Compiled:
    if dialect.name == "postgresql" and dialect.driver != "psycopg":
        dialect = _PYFORMAT
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


#: How long a connection the direct path keeps may sit unused before the pool has it back,
#: and how long after its checkout it goes back in any case (so that the pool sees each
#: connection now and then: recycling, a disposed engine). See DirectPool.
IDLE_SECONDS = 0.005
LEND_SECONDS = 1.0


@dataclass(slots=True)
class _Held:
    """A connection the direct path took from `pool`, and when: the machine's monotonic
    clock, not the service's (how long a connection is really held; no test moves it)."""

    fairy: PoolProxiedConnection
    pool: Pool
    since: float


#: Session settings of the lifecycle's statements (see DirectPool).
SESSION_SETTINGS = {
    "plan_cache_mode": "force_generic_plan",
    "enable_seqscan": "off",
    # A generic plan takes a `LIMIT $n` for a tenth of the rows: a list of 50 runs was
    # planned with parallel workers (Gather Merge), whose start cost more than the read.
    "max_parallel_workers_per_gather": "0",
}
_SET = "; ".join(f"SET {name} = {value}" for name, value in SESSION_SETTINGS.items())
_RESET = "; ".join(f"RESET {name}" for name in SESSION_SETTINGS)

#: Key, in a pooled connection's `info`, of "its session has SESSION_SETTINGS".
_LIFECYCLE = "agentrun_lifecycle_settings"

#: Set while the direct path checks a connection out (the checkout hook leaves it alone).
_direct: ContextVar[bool] = ContextVar("agentrun_direct_checkout", default=False)


def _defaults_on_checkout(
    _dbapi_connection: Any, record: ConnectionPoolEntry, _proxy: PoolProxiedConnection
) -> None:
    """A connection the direct path used goes back to the server's defaults before
    SQLAlchemy runs anything else on it (reports, lists: planned as they always were)."""
    driver = record.driver_connection
    if _direct.get() or not record.info.get(_LIFECYCLE) or driver is None:
        return
    try:
        await_(driver.execute(_RESET))
    except Exception as exc:  # the pool drops this connection and takes another
        raise sqlalchemy.exc.DisconnectionError(str(exc)) from exc
    record.info[_LIFECYCLE] = False


class DirectPool:
    """The lifecycle's statements on raw asyncpg connections of `engine`'s pool (one pool
    per process). Every statement is planned generically: each is keyed by a unique
    column or is the claim (served by its partial index), and re-planning a CTE per
    execution costs more than running it. Sequential scans are off for the same reason: a
    plan made while a table was empty (a new deployment's tool_calls, say) would otherwise
    scan it on every execution for the connection's life, however large it grew: the
    performance notes' sticky plan. These two settings are set on a connection when this
    path borrows it and reset when SQLAlchemy next takes it (one round trip each way,
    only when the connection changes hands), so the other queries keep the defaults.

    A connection it is done with stays with this path for its next statement while the
    pool could hand out another, so that nobody waits for this one (a timer gives back
    what sits unused for IDLE_SECONDS): a checkout and check-in through SQLAlchemy's pool
    cost about as much client CPU as the statement's own encoding, once per statement
    before. When the pool has run dry, each connection goes back after its statement, as
    before, and a checkout first lets a task the pool has just woken take what was given
    back.

    Behind a transaction-mode pooler (`create_engine(pgbouncer=True)`) a session setting
    would stay on whichever server session ran it, so none is set; statements are then
    unnamed (planned at each execution, with the values: no sticky plan either)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._lent: list[_Held] = []  # taken from the pool, between two statements
        self._release: asyncio.TimerHandle | None = None
        self._closed = False
        self._settings = not transaction_pooled(engine)
        pool = self._pool  # (its listeners stay on the pool a dispose() makes)
        if self._settings and not event.contains(pool, "checkout", _defaults_on_checkout):
            event.listen(pool, "checkout", _defaults_on_checkout)

    @property
    def _pool(self) -> Pool:
        """The engine's pool now (`dispose()` replaces it)."""
        return self.engine.sync_engine.pool

    def _room_in_pool(self) -> bool:
        """Whether the pool could hand a connection out now (an idle one, or room to make
        one): then nobody waits for one this path keeps."""
        pool = self._pool
        return isinstance(pool, QueuePool) and (
            pool.checkedin() > 0 or pool.checkedout() < pool.size()
        )

    async def _checkout(self) -> PoolProxiedConnection:
        """A connection of the pool. One that sits in it already is taken without a
        greenlet (a third of this path's CPU); making or awaiting one needs SQLAlchemy's
        greenlet, and so does a pooled connection due for recycling (found out by trying:
        the pool takes it back unchanged, to reconnect below)."""
        pool = self._pool
        if isinstance(pool, QueuePool) and pool.checkedin():
            try:
                return pool.connect()
            except sqlalchemy.exc.MissingGreenlet:
                pass
        return await greenlet_spawn(pool.connect)

    async def _borrow(self) -> _Held:
        if self._lent:  # one this path keeps: no pool round trip
            return self._lent.pop()
        await asyncio.sleep(0)  # a task the pool just woke takes what was given back first
        pool = self._pool
        token = _direct.set(True)
        try:
            fairy = await self._checkout()
        finally:
            _direct.reset(token)
        held = _Held(fairy, pool, SYSTEM_CLOCK.monotonic())
        if self._settings and not fairy.info.get(_LIFECYCLE):
            try:
                await fairy.driver_connection.execute(_SET)  # type: ignore[union-attr]
            except BaseException as exc:
                self._give_back(held, exc)
                raise
            fairy.info[_LIFECYCLE] = True
        return held

    def _give_back(self, held: _Held, exc: BaseException | None = None) -> None:
        """After a statement, or an error the server reported (the session is in sync):
        kept for this path's next statement while the pool could hand out another (so
        nobody waits for this one) and for at most LEND_SECONDS, else back to the pool.
        After anything else (a cancellation or a broken connection may leave the protocol
        mid-statement), or from a pool the engine has since disposed of: closed and
        dropped from the pool."""
        fairy = held.fairy
        driver = fairy.driver_connection
        healthy = exc is None or (
            isinstance(exc, asyncpg.PostgresError)
            and not isinstance(exc, asyncpg.PostgresConnectionError)
        )
        if not healthy or driver is None or driver.is_closed() or held.pool is not self._pool:
            fairy.invalidate(exc if isinstance(exc, Exception) else None)
            fairy.close()
            return
        loop = asyncio.get_running_loop()
        if (
            self._closed
            or not self._room_in_pool()
            or SYSTEM_CLOCK.monotonic() - held.since > LEND_SECONDS
            or (self._settings and not fairy.info.get(_LIFECYCLE))  # its SET failed
        ):
            fairy.close()  # no round trip: no transaction was begun through SQLAlchemy
            return
        self._lent.append(held)
        if self._release is None:
            self._release = loop.call_later(IDLE_SECONDS, self._return)

    def _return(self) -> None:
        """What this path keeps and is not using goes back to the pool (closed, if the
        engine has disposed of that pool since)."""
        self._release = None
        lent, self._lent = self._lent, []
        for held in lent:
            if held.pool is not self._pool:
                held.fairy.invalidate()
            held.fairy.close()

    async def fetchone(self, compiled: Compiled, values: Mapping[str, Any]) -> Any:
        """The first row (an asyncpg record: by name or position) of one autocommit
        statement, or None."""
        held = await self._borrow()
        try:
            row = await held.fairy.driver_connection.fetchrow(  # type: ignore[union-attr]
                compiled.sql, *compiled.params(values)
            )
        except BaseException as exc:
            self._give_back(held, exc)
            raise
        self._give_back(held)
        return row

    async def fetchall(self, compiled: Compiled, values: Mapping[str, Any]) -> list[Any]:
        held = await self._borrow()
        try:
            rows = await held.fairy.driver_connection.fetch(  # type: ignore[union-attr]
                compiled.sql, *compiled.params(values)
            )
        except BaseException as exc:
            self._give_back(held, exc)
            raise
        self._give_back(held)
        return list(rows)

    async def aclose(self) -> None:
        """What it keeps goes back to the engine's pool (disposed with it); from now on
        each connection goes back after its statement."""
        self._closed = True
        if self._release is not None:
            self._release.cancel()
        self._return()
