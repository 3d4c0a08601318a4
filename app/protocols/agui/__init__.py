"""AG-UI 1.0 for every named agent: `POST /ag-ui/{agent}` (app.protocols.agui.routes)
takes a `RunAgentInput` and answers a stream of AG-UI events (docs/ag-ui.md)."""

from __future__ import annotations

from fastapi import FastAPI


def install(app: FastAPI) -> None:
    """Mount the protocol's routes on `app` (the composition root calls it)."""
    from app.protocols.agui.routes import router

    app.include_router(router)
