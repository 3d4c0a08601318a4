"""Named, versioned agents and agents that call agents (`rows`: their SQL; `specs`: an
agent's body and what a run started from one becomes; `service`: the agents' operations
and checks; `spawn`: an agent tool's calls as child runs; `answers`: a child's end as its
parent's tool result; `routes`: the HTTP routes, mounted by the composition root). The
kernel knows a tree of runs (`app.store.trees`), not agents: `install` plugs them into
the store's extension points (`app.store.hooks`)."""

from __future__ import annotations

from app.agents.answers import Answers
from app.agents.rows import AgentRows
from app.agents.service import AgentService
from app.agents.spawn import Spawner
from app.service.runs import RunService
from app.service.schemas import RunCreate
from app.store.hooks import Sweep


def agent_service(runs: RunService) -> AgentService:
    """The agents of `runs`' store; an agent is written only if a run could start from it
    (a create's checks, nothing written)."""

    async def vet(body: RunCreate, tenant: str) -> object:
        return await runs.prepare(body, tenant=tenant)

    return AgentService(AgentRows(runs.store.backend), runs.settings, runs.clock, vet)


def install(runs: RunService) -> None:
    """Plug agents into `runs`' store: a create that names an agent is made from it
    (`templates`); a run's agent tools must name agents of its tenant (a create check);
    an agent tool's calls start child runs in the suspension's transaction
    (`round_spawns`); a child's end answers its parent's call (`run_ended`, and a sweep
    for what a crash left open)."""
    hooks = runs.store.hooks
    agents = agent_service(runs)
    hooks.template_with(agents)
    hooks.on_create_async(agents.check_create)
    hooks.spawn_with(Spawner(runs, agents, runs.settings))
    answers = Answers(runs)
    hooks.on_run_ended(answers.ended)
    hooks.add_sweep(Sweep("child runs answered", answers.sweep, every=5.0))
