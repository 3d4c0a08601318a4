"""The FastAPI application: routes, problems, limits, health, and its lifespan (one
engine per process; with `serve`, the in-process workers too)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST

from app import dashboard
from app.api import openapi, problems, routes
from app.api.live import EventHub
from app.api.metrics import render as render_metrics
from app.api.models import Health
from app.api.problems import CATALOGUE, problem
from app.api.security import BodyLimit
from app.api.throttle import FailureThrottle
from app.api.unavailable import DatabaseUnavailable
from app.service.runs import RunService
from app.settings import Settings
from app.store.db import create_engine
from app.store.errors import RETRY_AFTER_SECONDS
from app.store.runs import RunStore

DESCRIPTION = """Durable agent runs. A run drives a model through a multi-turn tool-calling
loop; when the model asks for tools the run suspends (`requires_action`) until the results
are posted, by API key or by the run's callback URL. Errors are RFC 9457 problems."""


def create_app(settings: Settings, *, worker_slots: int = 0) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        engine = create_engine(settings.database_url, pool_size=10 + worker_slots)
        store = RunStore(engine, webhook_url=settings.webhook_url)
        app.state.store = store
        app.state.service = RunService(store, settings)
        app.state.event_hub = EventHub(store, settings.database_url, settings.poll_interval)
        worker_task = None
        if worker_slots:
            from app.worker.worker import Worker

            worker = Worker(store, settings, concurrency=worker_slots)
            worker_task = asyncio.create_task(worker.run())
        try:
            yield
        finally:
            if worker_task is not None:
                worker.stop()
                await worker_task
            await app.state.event_hub.close()
            await store.aclose()

    app = FastAPI(
        title="agentrun-service",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Every route may meet a database outage (app.api.unavailable).
        responses=problems.responses(503),
    )
    app.state.settings = settings
    app.state.idempotency_in_flight = set()
    app.state.auth_throttle = FailureThrottle(
        settings.auth_failure_limit, settings.auth_failure_window
    )
    problems.install(app)
    openapi.install(app)
    app.include_router(routes.router)
    app.include_router(routes.callbacks)
    dashboard.install(app)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    app.add_middleware(DatabaseUnavailable)  # outermost: sees every route's exceptions

    @app.get("/healthz", response_model=Health, tags=["health"])
    async def healthz() -> Health:
        return Health(status="ok")

    @app.get(
        "/readyz",
        response_model=Health,
        tags=["health"],
        responses=problems.responses(503),
    )
    async def readyz(request: Request) -> Health | JSONResponse:
        try:
            async with request.app.state.store.engine.connect() as conn:
                await conn.execute(sa.text("SELECT 1"))
        except Exception as exc:  # any failure to reach the database
            return problem(
                "service-unavailable",
                f"database unreachable: {type(exc).__name__}",
                headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
            )
        return Health(status="ok")

    @app.get(
        "/metrics",
        tags=["health"],
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics(request: Request) -> PlainTextResponse:
        body = await render_metrics(request.app.state.store)
        return PlainTextResponse(body, media_type=CONTENT_TYPE_LATEST)

    @app.get("/problems/{code}", include_in_schema=False, response_class=HTMLResponse)
    async def problem_doc(code: str) -> HTMLResponse:
        if code not in CATALOGUE:
            return HTMLResponse("<h1>Unknown problem type</h1>", status_code=404)
        status, title, meaning = CATALOGUE[code]
        return HTMLResponse(f"<h1>{title}</h1><p>HTTP {status}.</p><p>{meaning}</p>")

    return app
