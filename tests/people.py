"""What the tests of the dashboard's people share: empty account tables, a second tenant
(`acme`) enabled, and a person made through the service."""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa

from app.store.runs import RunStore
from app.store.schema import operator_sessions, operators, tenants
from app.tenancy.operators import Account, OperatorService

TENANT = "acme"
PASSWORD = "correct horse battery staple"


async def reset_people(store: RunStore) -> None:
    """No accounts or sessions; tenant `acme` exists and, like `default`, is enabled."""
    async with store.engine.begin() as conn:
        await conn.execute(operator_sessions.delete())
        await conn.execute(operators.delete())
        found = await conn.execute(sa.select(tenants.c.id).where(tenants.c.id == TENANT))
        if found.first() is None:
            await conn.execute(
                tenants.insert().values(
                    id=TENANT, name="Acme", limits={}, created_at=datetime.now(UTC)
                )
            )
        mine = tenants.c.id.in_(("default", TENANT))
        await conn.execute(tenants.update().where(mine).values(disabled_at=None))


async def set_tenant_disabled(store: RunStore, tenant: str, disabled: bool) -> None:
    value = datetime.now(UTC) if disabled else None
    async with store.engine.begin() as conn:
        await conn.execute(tenants.update().where(tenants.c.id == tenant).values(disabled_at=value))


async def person(
    people: OperatorService, username: str, role: str = "operator", tenant: str = "default"
) -> Account:
    return await people.create(username, PASSWORD, role=role, tenant=tenant)


async def stored_rows(store: RunStore) -> str:
    """Every account and session row, as text (to look for a secret in)."""
    async with store.engine.connect() as conn:
        accounts = (await conn.execute(operators.select())).all()
        sessions = (await conn.execute(operator_sessions.select())).all()
    return repr([tuple(r) for r in accounts]) + repr([tuple(r) for r in sessions])
