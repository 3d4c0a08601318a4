"""The dashboard's people: accounts (`operators`) and their sessions (`operator_sessions`).

An account belongs to one tenant and has one role; its password is stored only as the
service's hash of it. A session row's id is the hash of the secret the browser's cookie
holds, so the table can be read without handing out a way in. Nothing here hashes or
decides: the service (app.tenancy.operators) does; this is the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.run_records import utc
from app.store.schema import operator_sessions, operators, tenants
from app.store.scoping import within


class UnknownTenant(Exception):
    """The account's tenant does not exist."""


class UsernameTaken(Exception):
    """Another account has this username (usernames are unique across tenants)."""


@dataclass(frozen=True, slots=True)
class OperatorRecord:
    id: str
    tenant_id: str
    username: str
    role: str
    password_hash: str
    created_at: datetime
    disabled_at: datetime | None
    active_sessions: int = 0


@dataclass(frozen=True, slots=True)
class OperatorSessionRecord:
    """A session with what a request needs of its account: whether both still stand
    is decided by the query that finds it (`OperatorAccounts.live_session`)."""

    id: str
    operator_id: str
    username: str
    tenant_id: str
    role: str
    created_at: datetime
    expires_at: datetime
    revoked_at: datetime | None


def _operator(row: Any, active: int = 0) -> OperatorRecord:
    created = utc(row.created_at)
    assert created is not None
    return OperatorRecord(
        row.id,
        row.tenant_id,
        row.username,
        row.role,
        row.password_hash,
        created,
        utc(row.disabled_at),
        active,
    )


def _session(row: Any) -> OperatorSessionRecord:
    created, expires = utc(row.created_at), utc(row.expires_at)
    assert created is not None and expires is not None
    return OperatorSessionRecord(
        row.id,
        row.operator_id,
        row.username,
        row.tenant_id,
        row.role,
        created,
        expires,
        utc(row.revoked_at),
    )


_SESSION_COLUMNS = (
    operator_sessions.c.id,
    operator_sessions.c.operator_id,
    operators.c.username,
    operators.c.tenant_id,
    operators.c.role,
    operator_sessions.c.created_at,
    operator_sessions.c.expires_at,
    operator_sessions.c.revoked_at,
)
_JOINED = operator_sessions.join(operators, operators.c.id == operator_sessions.c.operator_id)


class OperatorAccounts:
    """Accounts and sessions of the dashboard's people."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- accounts ----------------------------------------------------------------------

    async def create(
        self,
        *,
        id: str,
        tenant_id: str,
        username: str,
        role: str,
        password_hash: str,
        now: datetime,
    ) -> OperatorRecord:
        """A new account; `UnknownTenant` or `UsernameTaken` when it cannot be."""
        insert = (
            self.backend.insert(operators)
            .values(
                id=id,
                tenant_id=tenant_id,
                username=username,
                role=role,
                password_hash=password_hash,
                created_at=now,
            )
            .on_conflict_do_nothing(index_elements=["username"])
            .returning(*operators.c)
        )
        async with self.backend.transaction() as conn:
            found = await conn.execute(sa.select(tenants.c.id).where(tenants.c.id == tenant_id))
            if found.first() is None:
                raise UnknownTenant(tenant_id)
            row = (await conn.execute(insert)).first()
        if row is None:
            raise UsernameTaken(username)
        return _operator(row)

    async def by_username(self, username: str) -> OperatorRecord | None:
        stmt = operators.select().where(operators.c.username == username)
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _operator(row)

    async def list_accounts(self, scope: Scope, now: datetime) -> list[OperatorRecord]:
        """Accounts in `scope` by tenant and username, each with its count of live sessions."""
        live = (
            sa.select(sa.func.count())
            .where(
                operator_sessions.c.operator_id == operators.c.id,
                operator_sessions.c.revoked_at.is_(None),
                operator_sessions.c.expires_at > now,
            )
            .scalar_subquery()
        )
        stmt = sa.select(*operators.c, live.label("live")).order_by(
            operators.c.tenant_id, operators.c.username
        )
        stmt = stmt.where(*within(operators.c.tenant_id, scope))
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [_operator(r, int(r.live)) for r in rows]

    async def tenant_enabled(self, tenant_id: str) -> bool:
        stmt = sa.select(tenants.c.disabled_at).where(tenants.c.id == tenant_id)
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).first()
        return row is not None and row.disabled_at is None

    async def update(self, username: str, **values: Any) -> bool:
        """Set columns of one account (`disabled_at`, `password_hash`, `role`); whether
        it exists."""
        stmt = operators.update().where(operators.c.username == username).values(**values)
        async with self.backend.transaction() as conn:
            result = await conn.execute(stmt)
        return bool(result.rowcount)

    # --- sessions ----------------------------------------------------------------------

    async def start_session(
        self, *, id: str, operator_id: str, now: datetime, expires_at: datetime
    ) -> None:
        """A new session; the account's sessions that ended are dropped on the way."""
        ended = operator_sessions.delete().where(
            operator_sessions.c.operator_id == operator_id,
            sa.or_(
                operator_sessions.c.expires_at <= now,
                operator_sessions.c.revoked_at.is_not(None),
            ),
        )
        insert = operator_sessions.insert().values(
            id=id, operator_id=operator_id, created_at=now, expires_at=expires_at
        )
        async with self.backend.transaction() as conn:
            await conn.execute(ended)
            await conn.execute(insert)

    async def live_session(self, id: str, now: datetime) -> OperatorSessionRecord | None:
        """The session `id` if it stands: not revoked, not expired, its account not
        disabled and its tenant not disabled. One query: it runs on every request."""
        stmt = (
            sa.select(*_SESSION_COLUMNS)
            .select_from(_JOINED.join(tenants, tenants.c.id == operators.c.tenant_id))
            .where(
                operator_sessions.c.id == id,
                operator_sessions.c.revoked_at.is_(None),
                operator_sessions.c.expires_at > now,
                operators.c.disabled_at.is_(None),
                tenants.c.disabled_at.is_(None),
            )
        )
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).first()
        return None if row is None else _session(row)

    async def sessions(self, username: str, now: datetime) -> list[OperatorSessionRecord]:
        """The account's sessions that have not ended, newest first."""
        stmt = (
            sa.select(*_SESSION_COLUMNS)
            .select_from(_JOINED)
            .where(
                operators.c.username == username,
                operator_sessions.c.revoked_at.is_(None),
                operator_sessions.c.expires_at > now,
            )
            .order_by(operator_sessions.c.created_at.desc())
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).all()
        return [_session(r) for r in rows]

    async def revoke(
        self, now: datetime, *, username: str | None = None, session_id: str | None = None
    ) -> int:
        """Revoke the live sessions of an account, or one session (by id, or by a
        prefix of at least 8 characters of it, within the account when given); how many."""
        stmt = operator_sessions.update().where(operator_sessions.c.revoked_at.is_(None))
        if username is not None:
            account = sa.select(operators.c.id).where(operators.c.username == username)
            stmt = stmt.where(operator_sessions.c.operator_id.in_(account))
        if session_id is not None:
            if len(session_id) >= 64:
                stmt = stmt.where(operator_sessions.c.id == session_id)
            else:
                stmt = stmt.where(operator_sessions.c.id.startswith(session_id, autoescape=True))
        async with self.backend.transaction() as conn:
            result = await conn.execute(stmt.values(revoked_at=now))
        return int(result.rowcount)
