"""The agents pages, /admin/agents: the tenant's named agents (each at its latest version,
by name) and an agent's page with every version's spec. Read-only: agents are made and
versioned through the API (`/v1/agents`) and the command line; any role that may read
runs sees them, as `GET /v1/agents` lets it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.agents.rows import AgentRecord
from app.dashboard.web import Session, agents_of, error_page, render, scope_of, tenant_of
from app.service.errors import ServiceError
from app.service.schemas import AGENT_NAME

router = APIRouter(prefix="/admin/agents", include_in_schema=False)

PAGE_SIZE = 25
NAME = re.compile(AGENT_NAME)


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    agent: str | None  # an agent tool: the agent it calls (`name` or `name@version`)


@dataclass(frozen=True, slots=True)
class Card:
    """An agent's version as the pages show it (`record`: its fields as stored)."""

    record: AgentRecord

    @property
    def model(self) -> str:
        spec = self.record.spec.get("model") or {}
        return f"{spec.get('provider', '?')}/{spec.get('name', '?')}"

    @property
    def tools(self) -> list[Tool]:
        return [Tool(t["name"], t.get("agent")) for t in self.record.spec.get("tools") or ()]


@router.get("", response_class=HTMLResponse)
async def agents_page(
    request: Request, session: Session, cursor: str | None = None
) -> HTMLResponse:
    error = None
    if cursor and not NAME.fullmatch(cursor):  # (names only: a NUL is no name)
        error, cursor = "The page's cursor is not an agent's name: the first page is shown.", None
    found, next_cursor = await agents_of(request).page(
        scope=await scope_of(request), limit=PAGE_SIZE, after=cursor or None
    )
    context = {
        "agents": [Card(a) for a in found],
        "cursor": cursor,
        "next_cursor": next_cursor,
        "error": error,
    }
    return await render(request, "agents.html", context, session=session)


@router.get("/{name}", response_class=HTMLResponse)
async def agent_page(request: Request, name: str, session: Session) -> HTMLResponse:
    if not NAME.fullmatch(name):
        return await error_page(request, f"no agent named {name[:64]!r}", 404)
    try:
        versions = await agents_of(request).versions(name, tenant=await tenant_of(request))
    except ServiceError as exc:  # (none of this tenant's, or deleted)
        return await error_page(request, exc.detail, exc.status)
    cards = [Card(v) for v in reversed(versions)]  # newest first
    return await render(
        request, "agent.html", {"latest": cards[0], "versions": cards}, session=session
    )
