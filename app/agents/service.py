"""Named, versioned agents: create, version, read, delete; what a run that names one
becomes (`Templates` of the kernel's hooks); the checks that keep agent tools sound (each
names an agent of the tenant, and no chain of them nests deeper than runs may)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from app.agents.rows import AgentRecord, AgentRows
from app.agents.specs import (
    AgentIn,
    AgentUpdate,
    agent_tools,
    run_body,
    split_ref,
    stored_spec,
)
from app.clock import Clock
from app.core.scope import Scope
from app.service.errors import AgentExists, AgentNotFound, InvalidRequest
from app.service.schemas import RunCreate
from app.settings import Settings
from app.store.hooks import Creating

#: `(a create, its tenant)`: the create's checks, nothing written (`RunService.prepare`).
Vet = Callable[[RunCreate, str], Awaitable[object]]


class AgentService:
    def __init__(
        self, rows: AgentRows, settings: Settings, clock: Clock, vet: Vet | None = None
    ) -> None:
        self.rows = rows
        self.settings = settings
        self.clock = clock
        self.vet = vet

    # --- the API's operations ---------------------------------------------------------

    async def create(self, body: AgentIn, *, tenant: str, actor: str | None) -> AgentRecord:
        spec = stored_spec(body)
        await self._check_tools(tenant, body.name, spec)
        await self._vetted(spec, tenant)
        made = await self.rows.insert(
            tenant, body.name, body.description, spec, self.clock.now(), actor, new=True
        )
        if made is None:
            raise AgentExists(
                f"an agent named {body.name!r} exists: PUT /v1/agents/{body.name} makes its "
                "next version",
                name=body.name,
            )
        return made

    async def update(
        self, name: str, body: AgentUpdate, *, tenant: str, actor: str | None
    ) -> AgentRecord:
        """The agent's next version (versions are immutable)."""
        spec = stored_spec(body)
        if await self.rows.latest(tenant, name) is None:
            raise AgentNotFound(f"no agent named {name!r}")
        await self._check_tools(tenant, name, spec)
        await self._vetted(spec, tenant)
        made = await self.rows.insert(
            tenant, name, body.description, spec, self.clock.now(), actor, new=False
        )
        if made is None:  # (deleted meanwhile)
            raise AgentNotFound(f"no agent named {name!r}")
        return made

    async def get(self, name: str, version: int | None = None, *, tenant: str) -> AgentRecord:
        found = await self._find(tenant, name, version)
        if found is None:
            shown = name if version is None else f"{name}@{version}"
            raise AgentNotFound(f"no agent {shown!r}")
        return found

    async def versions(self, name: str, *, tenant: str) -> list[AgentRecord]:
        found = await self.rows.versions(tenant, name)
        if not found:
            raise AgentNotFound(f"no agent named {name!r}")
        return found

    async def page(
        self, *, scope: Scope, limit: int, after: str | None
    ) -> tuple[list[AgentRecord], str | None]:
        found = await self.rows.live(scope, limit=limit + 1, after=after)
        more = len(found) > limit
        found = found[:limit]
        return found, (found[-1].name if more and found else None)

    async def delete(self, name: str, *, tenant: str) -> None:
        """No new run starts from it; the runs in flight keep their version."""
        if not await self.rows.delete(tenant, name, self.clock.now()):
            raise AgentNotFound(f"no agent named {name!r}")

    # --- runs that name an agent ------------------------------------------------------

    async def resolve(self, ref: str, tenant: str) -> AgentRecord:
        """The version `ref` (`name` or `name@version`) names; a 422 when there is none
        (the reference is the body's)."""
        name, version = split_ref(ref)
        found = await self._find(tenant, name, version)
        if found is None:
            raise InvalidRequest(f"agent: no agent {ref!r} in this tenant")
        return found

    async def body_of(self, body: Any, tenant: str) -> tuple[RunCreate, Mapping[str, Any]]:
        """(`Templates`) The create as the agent it names makes it, and that agent."""
        assert isinstance(body, RunCreate) and body.agent is not None
        agent = await self.resolve(body.agent, tenant)
        label = f"{agent.name}@{agent.version}"
        return run_body(body, agent.spec, label), {"name": agent.name, "version": agent.version}

    async def check_create(self, creating: Creating) -> None:
        """(An async create check) A run's own agent tools name agents of its tenant."""
        for i, tool in enumerate(creating.agent.get("tools") or ()):
            ref = tool.get("agent")
            if ref and await self._find(creating.tenant, *split_ref(ref)) is None:
                raise InvalidRequest(f"tools[{i}].agent: no agent {ref!r} in this tenant")

    # --- helpers -------------------------------------------------------------------------

    async def _vetted(self, spec: Mapping[str, Any], tenant: str) -> None:
        """A run could start from it: a create's checks pass (its webhook's URL, a cost
        limit's price, its approval rules, the tools `tool_choice` names, ...)."""
        if self.vet is not None:
            await self.vet(RunCreate.model_validate({**spec, "prompt": "-"}), tenant)

    async def _find(self, tenant: str, name: str, version: int | None) -> AgentRecord | None:
        if version is None:
            return await self.rows.latest(tenant, name)
        return await self.rows.version(tenant, name, version)

    async def _check_tools(self, tenant: str, name: str, spec: Mapping[str, Any]) -> None:
        """Each agent tool names an agent of the tenant (this one, unpinned, is the version
        being written), and no chain of agent tools from this agent is longer than
        `AGENTRUN_MAX_AGENT_DEPTH` (a cycle is endless): such runs would only ever be
        refused their deepest calls."""
        limit = self.settings.max_agent_depth
        for i, ref in enumerate(agent_tools(dict(spec))):
            target, version = split_ref(ref)
            if target == name and version is None:
                continue  # (itself: the chain check names the cycle)
            if await self._find(tenant, target, version) is None:
                raise InvalidRequest(f"tools: agent tool {i} names no agent {ref!r} of this tenant")
        chain = await self._longest(tenant, (name, dict(spec)), dict(spec), [name], limit)
        if len(chain) - 1 > limit:
            raise InvalidRequest(
                "tools: the agent tools chain "
                + " → ".join(chain)
                + f" nests deeper than AGENTRUN_MAX_AGENT_DEPTH ({limit}): its deepest calls "
                "would always be refused"
            )

    async def _longest(
        self,
        tenant: str,
        writing: tuple[str, dict[str, Any]],
        spec: dict[str, Any],
        path: list[str],
        limit: int,
    ) -> list[str]:
        """The longest chain of agent tools from `path[-1]` (whose spec is `spec`;
        `writing`: the name and spec of the version being written, which its name unpinned
        means), cut one past `limit`: a cycle reaches it."""
        name = writing[0]
        if len(path) - 1 > limit:
            return path
        best = path
        for ref in agent_tools(spec):
            target, version = split_ref(ref)
            nested = None
            if target == name and version is None:
                nested = writing[1]
            else:
                found = await self._find(tenant, target, version)
                nested = None if found is None else found.spec
            if nested is None:
                continue
            chain = await self._longest(tenant, writing, nested, [*path, ref], limit)
            if len(chain) > len(best):
                best = chain
        return best
