"""The agents' routes: `/v1/agents` (create, list), `/v1/agents/{name}` (latest, next
version, delete) and its versions, mounted by the composition root (app.main)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field

from app.agents.rows import AgentRecord
from app.agents.service import AgentService
from app.agents.specs import AgentIn, AgentUpdate
from app.api.problems import responses
from app.api.routes import AUTH, REFERENCE, Reader, json_body
from app.api.security import authorize
from app.service.principals import Permission, Principal
from app.service.schemas import AGENT_NAME
from app.timestamps import Timestamp

router = APIRouter(prefix="/v1", tags=["agents"])
Manager = Annotated[Principal, Depends(authorize(Permission.AGENTS_MANAGE))]
AgentName = Annotated[
    str, Path(min_length=1, max_length=64, pattern=AGENT_NAME, description="an agent's name")
]
Version = Annotated[int, Path(ge=1, le=999_999_999, description="a version of the agent")]


async def agents_of(request: Request) -> AgentService:
    agents: AgentService = request.app.state.agents
    return agents


Agents = Annotated[AgentService, Depends(agents_of)]


class AgentOut(BaseModel):
    name: str
    version: int
    description: str
    spec: dict[str, Any] = Field(
        description="the fields its runs take (model, preamble, tools, limits, ...), as given"
    )
    created_at: Timestamp
    created_by: str | None

    @classmethod
    def of(cls, record: AgentRecord) -> AgentOut:
        return cls(
            name=record.name,
            version=record.version,
            description=record.description,
            spec=record.spec,
            created_at=record.created_at,
            created_by=record.created_by,
        )


class AgentList(BaseModel):
    data: list[AgentOut]
    next_cursor: str | None


DOCS = f"`{REFERENCE}#agents`"


@router.post(
    "/agents",
    response_model=AgentOut,
    status_code=201,
    responses={**AUTH, **responses(400, 403, 409, 413, 422)},
    summary="Create a named agent (its version 1)",
    description=f"A named agent of the caller's tenant that runs start from: {DOCS}.",
)
async def create_agent(body: AgentIn, agents: Agents, principal: Manager) -> Response:
    made = await agents.create(body, tenant=principal.tenant, actor=principal.actor)
    return json_body(AgentOut.of(made), 201)


@router.get(
    "/agents",
    response_model=AgentList,
    responses={**AUTH, **responses(422)},
    summary="List the tenant's agents (each at its latest version), by name",
)
async def list_agents(
    agents: Agents,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[
        str | None,
        Query(max_length=64, pattern=AGENT_NAME, description="`next_cursor` of the page before"),
    ] = None,
) -> Response:
    found, more = await agents.page(scope=principal.scope, limit=limit, after=cursor)
    return json_body(AgentList(data=[AgentOut.of(a) for a in found], next_cursor=more))


@router.get(
    "/agents/{name}",
    response_model=AgentOut,
    responses={**AUTH, **responses(404, 422)},
    summary="An agent at its latest version",
)
async def get_agent(name: AgentName, agents: Agents, principal: Reader) -> Response:
    return json_body(AgentOut.of(await agents.get(name, tenant=principal.tenant)))


@router.put(
    "/agents/{name}",
    response_model=AgentOut,
    responses={**AUTH, **responses(400, 403, 404, 413, 422)},
    summary="Make an agent's next version (versions are immutable)",
    description="The runs in flight keep the version they started from; new runs that name "
    f"the agent without a version take this one: {DOCS}.",
)
async def update_agent(
    name: AgentName, body: AgentUpdate, agents: Agents, principal: Manager
) -> Response:
    made = await agents.update(name, body, tenant=principal.tenant, actor=principal.actor)
    return json_body(AgentOut.of(made))


@router.delete(
    "/agents/{name}",
    status_code=204,
    responses={**AUTH, **responses(403, 404, 422)},
    summary="Delete an agent: no new run starts from it; runs in flight keep their version",
)
async def delete_agent(name: AgentName, agents: Agents, principal: Manager) -> Response:
    await agents.delete(name, tenant=principal.tenant)
    return Response(status_code=204)


@router.get(
    "/agents/{name}/versions",
    response_model=AgentList,
    responses={**AUTH, **responses(404, 422)},
    summary="Every version of an agent, oldest first",
)
async def list_versions(name: AgentName, agents: Agents, principal: Reader) -> Response:
    found = await agents.versions(name, tenant=principal.tenant)
    return json_body(AgentList(data=[AgentOut.of(a) for a in found], next_cursor=None))


@router.get(
    "/agents/{name}/versions/{version}",
    response_model=AgentOut,
    responses={**AUTH, **responses(404, 422)},
    summary="One version of an agent",
)
async def get_version(
    name: AgentName, version: Version, agents: Agents, principal: Reader
) -> Response:
    return json_body(AgentOut.of(await agents.get(name, version, tenant=principal.tenant)))
