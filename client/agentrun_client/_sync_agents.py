# Generated from _async_agents.py by client/scripts/generate_sync.py (unasync): do not edit;
# edit _async_agents.py and run `make sync-client`.
"""`AsyncAgents`, the tenant's named agents; `_sync_agents.py` (`Agents`) is generated from
this file with `_sync.py` (`make sync-client`): edit this one, then regenerate."""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping
from typing import Any, Unpack

from agentrun_client import _agents, _base
from agentrun_client._agents import AgentFields
from agentrun_client._base import Call
from agentrun_client._sync_approvals import Requester
from agentrun_client.models import Agent, AgentPage


class Agents:
    """`/v1/agents`: named, versioned agents that runs start from (`runs.create(agent=…)`,
    `run(agent=…)`) and that agent tools call. Versions are immutable: `update` makes the
    next one, and runs in flight keep the version they started from. Reads need
    `runs:read`; writes `agents:manage` (else `Forbidden`)."""

    def __init__(self, client: Requester) -> None:
        self._client = client

    def _json(self, call: Call) -> Any:
        response = self._client.request(call)
        return response.json()

    def create(
        self,
        name: str,
        description: str,
        model: Mapping[str, Any],
        **fields: Unpack[AgentFields],
    ) -> Agent:
        """Its version 1 (`Conflict` `agent-exists` when the name is taken: `update`)."""
        _agents.agent_path(name)  # (`InvalidInput` for a name the service would refuse)
        body = {"name": name, **_agents.agent_body(description, model, fields)}
        return Agent.model_validate(self._json(Call("POST", "/v1/agents", json=body)))

    def get(self, name: str, version: int | None = None) -> Agent:
        """Its latest version, or `version` (`NotFound` `agent-not-found`)."""
        suffix = "" if version is None else f"/versions/{int(version)}"
        call = Call("GET", _agents.agent_path(name, suffix), safe=True)
        return Agent.model_validate(self._json(call))

    def versions(self, name: str) -> builtins.list[Agent]:
        """Every version, oldest first."""
        call = Call("GET", _agents.agent_path(name, "/versions"), safe=True)
        return AgentPage.model_validate(self._json(call)).data

    def list_page(self, *, limit: int = 20, cursor: str | None = None) -> AgentPage:
        """One page of the tenant's agents (each at its latest version), by name."""
        call = Call("GET", "/v1/agents", _base.page_params(limit, cursor), safe=True)
        return AgentPage.model_validate(self._json(call))

    def list(self, *, page_size: int = 100) -> Iterator[Agent]:
        """Every agent at its latest version, by name, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = self.list_page(limit=page_size, cursor=cursor)
            yield from page.data
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def update(
        self,
        name: str,
        description: str,
        model: Mapping[str, Any],
        **fields: Unpack[AgentFields],
    ) -> Agent:
        """Its next version, whole (a field left out is not taken from the one before):
        new runs that name it without a version start from this one."""
        body = _agents.agent_body(description, model, fields)
        call = Call("PUT", _agents.agent_path(name), json=body)
        return Agent.model_validate(self._json(call))

    def delete(self, name: str) -> None:
        """No new run starts from it (nor may an agent tool call it); runs in flight keep
        their version."""
        self._client.request(Call("DELETE", _agents.agent_path(name)))
