"""A2A (Agent2Agent, v1.0) for every named agent: `tasks` maps a run to a task, `handler`
answers the protocol's methods over the service, `card` is an agent's card, `routes`
mounts the SDK's JSON-RPC and HTTP+JSON routes over the handler behind our keys."""

from __future__ import annotations

from fastapi import FastAPI

from app.protocols.a2a.routes import routes


def install(app: FastAPI) -> None:
    """Mount the A2A routes on `app` (the composition root calls it)."""
    app.router.routes.extend(routes())
