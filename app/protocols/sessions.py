"""An agent's conversations as the open protocols hold them (A2A's contexts, AG-UI's
threads): a user's message starts a run of the named agent, or continues the latest run
of its conversation; the tools a protocol's caller brings (AG-UI's frontend tools) join
the agent's as client tools. A conversation is named by its first run's id (the API's
`conversation_id`), so nothing is stored beside the runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import ValidationError

from app.agents.rows import AgentRecord
from app.agents.service import AgentService
from app.conversations.service import latest
from app.core.scope import Scope
from app.service import lineage
from app.service.errors import InvalidRequest, RunNotFound
from app.service.lineage import ORIGIN_KEY
from app.service.runs import RunService, RunView
from app.service.schemas import RunCreate
from app.service.types import RunRecord

#: The key of a run's `origin` mark that lists the tools its turn brought (AG-UI's
#: frontend tools): client tools of that run only, never of the agent.
BROUGHT_KEY = "frontend_tools"


@dataclass(frozen=True, slots=True)
class Turn:
    """A user's message to a named agent over a protocol."""

    agent: str  # the agent's name (its latest version, unless the conversation has one)
    prompt: str
    tenant: str
    actor: str | None
    origin: Mapping[str, Any]  # `{"protocol", ...}`: the run's `origin` mark
    conversation: str | None = None  # continue this conversation (its first run's id)
    tools: Sequence[Mapping[str, Any]] | None = None  # client tools added to the agent's
    history: Sequence[Mapping[str, Any]] = field(default_factory=tuple)  # a new one's
    if_busy: Literal["reject", "enqueue", "interrupt"] = "reject"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None
    stream: bool | None = None  # the run's `stream` (None: the agent's, or off)


@dataclass(frozen=True, slots=True)
class Planned:
    """A turn's run, checked and not yet created (`Sessions.plan`)."""

    turn: Turn
    body: RunCreate
    named: Mapping[str, Any]  # the agent (and version) it runs
    head: RunRecord | None  # the run it continues (a conversation's latest)


class Sessions:
    """The operations both protocols share, over the service and the agents."""

    def __init__(self, runs: RunService, agents: AgentService) -> None:
        self.runs = runs
        self.agents = agents

    async def agent(self, name: str, tenant: str) -> AgentRecord:
        """The agent at its latest version (`AgentNotFound`: none of the tenant's)."""
        return await self.agents.get(name, tenant=tenant)

    async def head(
        self, agent: str, conversation: str, scope: Scope, idempotency_key: str | None = None
    ) -> RunRecord:
        """The latest run of `agent`'s conversation `conversation` in `scope` (before the
        run `idempotency_key` made, if one did: a retried turn continues what the first
        continued); a run that starts none, another agent's or another tenant's is
        `RunNotFound`."""
        try:
            first = (await self.runs.get_run(conversation, scope=scope)).record
        except RunNotFound:
            first = None
        named = None if first is None else lineage.agent_of(first)
        if (
            first is None
            or lineage.conversation_of(first) != first.id
            or named is None
            or named.get("name") != agent
        ):
            raise RunNotFound(f"no conversation {conversation} of the agent {agent}")
        record, _ = await latest(self.runs.store, first, scope, idempotency_key)
        return record

    async def start(self, turn: Turn) -> RunView:
        """The run `turn` starts: the agent's first of a conversation, or the next of
        `turn.conversation` (continuing its latest run, by `if_busy` while that one is
        active: `ConversationBusy`); created with the agent's settings, the turn's tools
        added as client tools, and its `origin` mark."""
        return await self.create(await self.plan(turn))

    async def plan(self, turn: Turn) -> Planned:
        """The run `turn` would start, checked (422 naming what is wrong) and not
        created: a protocol that writes more for the same request (AG-UI's decisions)
        checks the turn before its first write."""
        scope = Scope.of(turn.tenant)
        head = None
        if turn.conversation is not None:
            head = await self.head(turn.agent, turn.conversation, scope, turn.idempotency_key)
            named = lineage.agent_of(head) or {}
            spec = await self._spec_of(turn.agent, named.get("version"), turn.tenant, head)
            fields: dict[str, Any] = {
                "prompt": turn.prompt,
                "previous_run_id": head.id,
                "if_busy": turn.if_busy,
            }
            if turn.tools is not None:
                fields["tools"] = joined(spec.get("tools") or [], turn.tools)
        else:
            record = await self.agent(turn.agent, turn.tenant)
            named = {"name": record.name, "version": record.version}
            fields = {
                **record.spec,
                "prompt": turn.prompt,
                "history": list(turn.history),
                "tools": joined(record.spec.get("tools") or [], turn.tools or ()),
            }
        if turn.stream is not None:
            fields["stream"] = turn.stream
        if turn.metadata:
            fields["metadata"] = {**(fields.get("metadata") or {}), **turn.metadata}
        return Planned(turn, validated(fields), dict(named), head)

    async def create(self, planned: Planned) -> RunView:
        """The run `planned` (`plan`'s) names, created (or, for its idempotency key, the
        run made already)."""
        turn = planned.turn
        view, _ = await self.runs.create_run(
            planned.body,
            idempotency_key=turn.idempotency_key,
            actor=turn.actor,
            tenant=turn.tenant,
            named=planned.named,
            marks={ORIGIN_KEY: dict(turn.origin)},
        )
        return view

    async def _spec_of(
        self, name: str, version: Any, tenant: str, head: RunRecord
    ) -> Mapping[str, Any]:
        """The agent version a conversation runs (its tools: the base a turn's own tools
        join); the last run's configuration when that version is gone, without the tools
        its own turn brought (AG-UI's frontend tools: that turn's, not the agent's)."""
        if isinstance(version, int):
            found = await self.agents.rows.version(tenant, name, version)
            if found is not None:
                return found.spec
        brought = set((lineage.origin_of(head) or {}).get(BROUGHT_KEY) or ())
        tools = [t for t in head.config.get("tools") or () if t.get("name") not in brought]
        return {**head.config, "tools": tools}


def joined(
    own: Sequence[Mapping[str, Any]], added: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The agent's tools, then the caller's; a caller's tool named like one of the
    agent's is refused (422): it would answer calls the agent's executors should."""
    names = {t.get("name") for t in own}
    for i, tool in enumerate(added):
        if tool.get("name") in names:
            raise InvalidRequest(
                f"tools[{i}].name: the agent has a tool named {tool.get('name')!r}; a "
                "caller's tools may not replace the agent's"
            )
    return [dict(t) for t in own] + [dict(t) for t in added]


def validated(fields: Mapping[str, Any]) -> RunCreate:
    """`fields` as a create (422 naming the first field that is wrong)."""
    try:
        return RunCreate.model_validate(dict(fields))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"]) or "body"
        raise InvalidRequest(f"{where}: {error['msg']}") from None
