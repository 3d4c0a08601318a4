"""Tenants and API keys: the rows `app.tenancy.keys` and `app.tenancy.tenants` decide on.

A key row holds a public lookup id and a hash of the secret, never the secret. The
authenticator reads one key by id (`key`, joined with its tenant's `disabled_at`); the
rest is administration (create, list, revoke, rotate; tenants' names and limits), rare and
off the hot path.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.run_records import utc
from app.store.schema import api_keys, tenants
from app.store.scoping import within


@dataclass(frozen=True, slots=True)
class TenantRecord:
    id: str
    name: str
    limits: dict[str, Any]
    created_at: datetime
    disabled_at: datetime | None

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> TenantRecord:
        return cls(
            id=row["id"],
            name=row["name"],
            limits=dict(row["limits"] or {}),
            created_at=utc(row["created_at"]),  # type: ignore[arg-type]
            disabled_at=utc(row["disabled_at"]),
        )


@dataclass(frozen=True, slots=True)
class KeyRecord:
    id: str
    tenant_id: str
    role: str
    name: str
    secret_hash: str
    created_at: datetime
    created_by: str | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    rotated_from: str | None = None
    #: Read with the key by `Identities.key`: a disabled tenant's keys are refused.
    tenant_disabled: bool = False

    @classmethod
    def from_row(cls, row: Mapping[Any, Any]) -> KeyRecord:
        return cls(
            id=row["id"],
            tenant_id=row["tenant_id"],
            role=row["role"],
            name=row["name"],
            secret_hash=row["secret_hash"],
            created_at=utc(row["created_at"]),  # type: ignore[arg-type]
            created_by=row["created_by"],
            expires_at=utc(row["expires_at"]),
            revoked_at=utc(row["revoked_at"]),
            rotated_from=row["rotated_from"],
            tenant_disabled=row.get("tenant_disabled_at") is not None,
        )

    def columns(self) -> dict[str, Any]:
        return {c.name: getattr(self, c.name) for c in api_keys.columns}


@functools.cache
def key_by_id() -> sa.Select[Any]:
    """One key with its tenant's `disabled_at` (`p_id`): the authenticator's read."""
    return (
        sa.select(*api_keys.columns, tenants.c.disabled_at.label("tenant_disabled_at"))
        .select_from(api_keys.join(tenants, tenants.c.id == api_keys.c.tenant_id))
        .where(api_keys.c.id == sa.bindparam("p_id", type_=sa.String()))
    )


def _usable(now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        api_keys.c.revoked_at.is_(None),
        sa.or_(api_keys.c.expires_at.is_(None), api_keys.c.expires_at > now),
        tenants.c.disabled_at.is_(None),
    )


class Identities:
    """Tenants and their API keys."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    # --- tenants ------------------------------------------------------------------------

    async def tenants(self) -> list[TenantRecord]:
        async with self.backend.reader() as conn:
            rows = (await conn.execute(tenants.select().order_by(tenants.c.id))).mappings()
            return [TenantRecord.from_row(r) for r in rows.all()]

    async def tenant(self, tenant_id: str) -> TenantRecord | None:
        stmt = tenants.select().where(tenants.c.id == tenant_id)
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else TenantRecord.from_row(row)

    async def create_tenant(self, record: TenantRecord) -> bool:
        """False when the id is taken (nothing written)."""
        stmt = (
            self.backend.insert(tenants)
            .values(
                id=record.id,
                name=record.name,
                limits=record.limits,
                created_at=record.created_at,
                disabled_at=record.disabled_at,
            )
            .on_conflict_do_nothing(index_elements=["id"])
            .returning(tenants.c.id)
        )
        async with self.backend.transaction() as conn:
            return (await conn.execute(stmt)).first() is not None

    async def update_tenant(self, tenant_id: str, values: Mapping[str, Any]) -> TenantRecord | None:
        """Set columns (`name`, `limits`, `disabled_at`); None when there is no such tenant."""
        stmt = (
            tenants.update()
            .where(tenants.c.id == tenant_id)
            .values(**values)
            .returning(*tenants.columns)
        )
        async with self.backend.transaction() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else TenantRecord.from_row(row)

    # --- keys ---------------------------------------------------------------------------

    async def key(self, key_id: str) -> KeyRecord | None:
        """The key with this lookup id (and whether its tenant is disabled)."""
        row = await self.backend.fetch_one(key_by_id(), {"p_id": key_id})
        return None if row is None else KeyRecord.from_row(row)

    async def keys(self, scope: Scope) -> list[KeyRecord]:
        """Every key in `scope`, oldest first."""
        stmt = api_keys.select().order_by(api_keys.c.created_at, api_keys.c.id)
        stmt = stmt.where(*within(api_keys.c.tenant_id, scope))
        async with self.backend.reader() as conn:
            return [KeyRecord.from_row(r) for r in (await conn.execute(stmt)).mappings().all()]

    async def create_key(self, record: KeyRecord) -> bool:
        """False when its tenant does not exist (nothing written)."""
        async with self.backend.transaction() as conn:
            exists = select_tenant_id(record.tenant_id)
            if (await conn.execute(exists)).first() is None:
                return False
            await conn.execute(api_keys.insert().values(**record.columns()))
        return True

    async def revoke_key(self, key_id: str, now: datetime, scope: Scope) -> KeyRecord | None:
        """Revoke (once: a second revocation keeps the first time); None when there is no
        such key (in `scope`)."""
        stmt = (
            api_keys.update()
            .where(api_keys.c.id == key_id)
            .values(revoked_at=sa.func.coalesce(api_keys.c.revoked_at, now))
            .returning(*api_keys.columns)
        ).where(*within(api_keys.c.tenant_id, scope))
        async with self.backend.transaction() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else KeyRecord.from_row(row)

    async def rotate_key(
        self, key_id: str, new: KeyRecord, old_until: datetime, scope: Scope
    ) -> tuple[KeyRecord, KeyRecord] | None:
        """Insert `new` (a successor of `key_id`) and let the old key expire at `old_until`
        (or earlier, when it already expires earlier), in one transaction: (old, new), or
        None when there is no such key (in `scope`) or it is revoked."""
        old_expiry = sa.case(
            (
                sa.and_(api_keys.c.expires_at.is_not(None), api_keys.c.expires_at < old_until),
                api_keys.c.expires_at,
            ),
            else_=old_until,
        )
        stmt = (
            api_keys.update()
            .where(api_keys.c.id == key_id, api_keys.c.revoked_at.is_(None))
            .values(expires_at=old_expiry)
            .returning(*api_keys.columns)
        ).where(*within(api_keys.c.tenant_id, scope))
        async with self.backend.transaction() as conn:
            row = (await conn.execute(stmt)).mappings().first()
            if row is None:
                return None
            old = KeyRecord.from_row(row)
            successor = KeyRecord(
                **{
                    **new.columns(),
                    "tenant_id": old.tenant_id,
                    "role": old.role,
                    "rotated_from": old.id,
                }
            )
            await conn.execute(api_keys.insert().values(**successor.columns()))
        return old, successor

    async def usable_key_exists(self, now: datetime) -> bool:
        """Whether some key is neither revoked nor expired, of a tenant not disabled."""
        stmt = (
            sa.select(api_keys.c.id)
            .select_from(api_keys.join(tenants, tenants.c.id == api_keys.c.tenant_id))
            .where(_usable(now))
            .limit(1)
        )
        async with self.backend.reader() as conn:
            return (await conn.execute(stmt)).first() is not None


def select_tenant_id(tenant_id: str) -> sa.Select[Any]:
    return sa.select(tenants.c.id).where(tenants.c.id == tenant_id)
