"""The `agents` table's SQL: a tenant's agents, one row per immutable version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from app.core.scope import Scope
from app.store.backend.base import Backend
from app.store.run_records import utc
from app.store.schema import agents
from app.store.scoping import within


@dataclass(frozen=True, slots=True)
class AgentRecord:
    tenant_id: str
    name: str
    version: int
    description: str
    spec: dict[str, Any]  # the run fields it gives its runs, as given
    created_at: datetime
    created_by: str | None

    @classmethod
    def from_row(cls, m: Mapping[Any, Any]) -> AgentRecord:
        return cls(
            tenant_id=m["tenant_id"],
            name=m["name"],
            version=m["version"],
            description=m["description"],
            spec=m["spec"],
            created_at=utc(m["created_at"]),  # type: ignore[arg-type]
            created_by=m["created_by"],
        )


class AgentRows:
    """Reads and writes of `agents` on one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    async def latest(self, tenant: str, name: str) -> AgentRecord | None:
        """The agent's newest version, unless it was deleted."""
        stmt = (
            agents.select()
            .where(agents.c.tenant_id == tenant, agents.c.name == name)
            .order_by(agents.c.version.desc())
            .limit(1)
        )
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        if row is None or row["deleted_at"] is not None:
            return None
        return AgentRecord.from_row(row)

    async def version(self, tenant: str, name: str, version: int) -> AgentRecord | None:
        """One version of a live agent (none of a deleted one)."""
        stmt = agents.select().where(
            agents.c.tenant_id == tenant,
            agents.c.name == name,
            agents.c.version == version,
            agents.c.deleted_at.is_(None),
        )
        async with self.backend.reader() as conn:
            row = (await conn.execute(stmt)).mappings().first()
        return None if row is None else AgentRecord.from_row(row)

    async def versions(self, tenant: str, name: str) -> list[AgentRecord]:
        """Every version of a live agent, oldest first."""
        stmt = (
            agents.select()
            .where(agents.c.tenant_id == tenant, agents.c.name == name)
            .order_by(agents.c.version)
        )
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        if not rows or rows[-1]["deleted_at"] is not None:
            return []
        return [AgentRecord.from_row(r) for r in rows]

    async def live(self, scope: Scope, *, limit: int, after: str | None) -> list[AgentRecord]:
        """The live agents of `scope` (each at its latest version), by name."""
        newest = (
            sa.select(agents.c.tenant_id, agents.c.name, sa.func.max(agents.c.version).label("v"))
            .where(*within(agents.c.tenant_id, scope))
            .group_by(agents.c.tenant_id, agents.c.name)
            .subquery()
        )
        stmt = (
            agents.select()
            .join(
                newest,
                sa.and_(
                    agents.c.tenant_id == newest.c.tenant_id,
                    agents.c.name == newest.c.name,
                    agents.c.version == newest.c.v,
                ),
            )
            .where(agents.c.deleted_at.is_(None))
            .order_by(agents.c.name, agents.c.tenant_id)
            .limit(limit)
        )
        if after is not None:
            stmt = stmt.where(agents.c.name > after)
        async with self.backend.reader() as conn:
            rows = (await conn.execute(stmt)).mappings().all()
        return [AgentRecord.from_row(r) for r in rows]

    async def insert(
        self,
        tenant: str,
        name: str,
        description: str,
        spec: Mapping[str, Any],
        now: datetime,
        actor: str | None,
        *,
        new: bool,
    ) -> AgentRecord | None:
        """Add the agent's next version (`new`: its first, or the first after a delete;
        else the next of a live agent). None: refused (`new` and the name is live, or not
        `new` and it is not); two concurrent writers of one name: one wins, the other's
        insert collides on the primary key and is refused."""
        async with self.backend.transaction() as conn:
            last = (
                await conn.execute(
                    sa.select(agents.c.version, agents.c.deleted_at)
                    .where(agents.c.tenant_id == tenant, agents.c.name == name)
                    .order_by(agents.c.version.desc())
                    .limit(1)
                )
            ).first()
            live = last is not None and last[1] is None
            if live == new:
                return None
            version = 1 if last is None else last[0] + 1
            values = {
                "tenant_id": tenant,
                "name": name,
                "version": version,
                "description": description,
                "spec": dict(spec),
                "created_at": now,
                "created_by": actor,
            }
            insert = self.backend.insert(agents).values(values).on_conflict_do_nothing()
            done = await conn.execute(insert)
            if done.rowcount == 0:
                return None
        return AgentRecord.from_row({**values, "deleted_at": None})

    async def delete(self, tenant: str, name: str, now: datetime) -> bool:
        """Mark every version of a live agent deleted; False when there was none."""
        stmt = (
            agents.update()
            .where(
                agents.c.tenant_id == tenant,
                agents.c.name == name,
                agents.c.deleted_at.is_(None),
            )
            .values(deleted_at=now)
        )
        async with self.backend.transaction() as conn:
            done = await conn.execute(stmt)
        return bool(done.rowcount)
