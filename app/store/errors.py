"""Which failures mean "the database is not there right now".

The service answers those with 503 and a `Retry-After` (the request changed nothing it
can vouch for, and the same request may succeed in a moment), and a worker gives back
the runs whose drive they broke as soon as the database answers again. Everything else
is a bug and stays a 500.

The drivers report an outage in many shapes: a refused connect (OSError), a server that
is shutting down or starting up (SQLSTATE class 57P / 08 / 53300), a pooled connection
that died (psycopg's OperationalError, asyncpg's ConnectionDoesNotExistError and
InterfaceError "connection is closed"), SQLite's write lock held by another connection for
longer than the busy timeout, SQLAlchemy's wrappers of those and its pool timeout. They
are recognised here, in one place, by walking the exception's causes.
"""

from __future__ import annotations

import errno
import sqlite3

import asyncpg  # type: ignore[import-untyped]
import psycopg
import sqlalchemy.exc

#: SQLSTATE classes/codes of an unavailable server: connection exceptions (08),
#: operator intervention (57P01 admin shutdown, 57P02 crash shutdown, 57P03 cannot
#: connect now), too many connections (53300).
_STATES = ("08", "57P", "53300")

_NETWORK_ERRNOS = frozenset(
    {errno.ECONNREFUSED, errno.ECONNRESET, errno.EHOSTUNREACH, errno.ENETUNREACH, errno.ETIMEDOUT}
)

#: SQLite's refusals when its lock stayed taken for the whole busy timeout.
_SQLITE_BUSY = ("database is locked", "database is busy")

#: Seconds a client is told to wait before retrying.
RETRY_AFTER_SECONDS = 2


def _sqlstate(exc: BaseException) -> str | None:
    state = getattr(exc, "sqlstate", None)
    return state if isinstance(state, str) else None


def _one(exc: BaseException) -> bool:
    if isinstance(exc, sqlalchemy.exc.DBAPIError) and exc.connection_invalidated:
        return True
    if isinstance(exc, sqlalchemy.exc.TimeoutError | sqlalchemy.exc.DisconnectionError):
        return True  # the pool had no connection to give (all stuck on a dead server)
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return True
    if isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.ConnectionDoesNotExistError
        | asyncpg.CannotConnectNowError
        | asyncpg.exceptions.AdminShutdownError
        | asyncpg.exceptions.CrashShutdownError
        | asyncpg.exceptions.TooManyConnectionsError,
    ):
        return True
    if isinstance(exc, asyncpg.InterfaceError) and any(
        w in str(exc) for w in ("is closed", "was closed")
    ):
        return True
    if isinstance(exc, asyncpg.InternalClientError):
        # The protocol state of a connection the server ended while it sat idle (the
        # FATAL of a shutdown arrives unasked): "cannot switch to state ...".
        return True
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    if isinstance(exc, OSError) and (
        exc.errno in _NETWORK_ERRNOS or "Connect call failed" in str(exc)
    ):
        return True  # asyncio's connect to several addresses: "Multiple exceptions: ..."
    if isinstance(exc, sqlite3.OperationalError) and str(exc).startswith(_SQLITE_BUSY):
        return True  # another connection held SQLite's write lock past the busy timeout
    state = _sqlstate(exc)
    return state is not None and state.startswith(_STATES)


def is_unavailable(exc: BaseException) -> bool:
    """Whether `exc` (or an exception it was raised from) is a database outage."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if _one(current):
            return True
        if isinstance(current, BaseExceptionGroup):  # a task group's (an SSE body's)
            return bool(current.exceptions) and all(map(is_unavailable, current.exceptions))
        orig = current.orig if isinstance(current, sqlalchemy.exc.DBAPIError) else None
        if orig is not None and _one(orig):
            return True
        current = current.__cause__  # not __context__: a bug raised while handling an
        # outage is still a bug
    return False


class NotFoundError(Exception):
    """No run has the given id (or callback token)."""
