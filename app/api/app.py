"""The FastAPI application: routes, problems, limits and health. What it serves with (the
service, its reads, the live-event hub) is put in `app.state` by the lifespan the
composition root (app.main) passes in."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp

from app.api import openapi, problems, providers, routes
from app.api.metrics import render as render_metrics
from app.api.models import Health
from app.api.problems import CATALOGUE, problem
from app.api.security import BodyLimit, authorize
from app.api.throttle import FailureThrottle
from app.api.unavailable import DatabaseUnavailable
from app.clock import Clock
from app.service.errors import RETRY_AFTER_SECONDS
from app.service.principals import ADMIN, Authenticator, Grants, Permission, RunTokens
from app.service.reads import RunReads
from app.settings import Settings

DESCRIPTION = f"""Durable agent runs. A run drives a model through a multi-turn tool-calling
loop; when the model asks for tools the run suspends (`requires_action`) until the results
are posted, by API key or by the run's callback URL. Errors are RFC 9457 problems.

What every run option does, every event type with its payload, the webhook payloads and
headers, statuses, waiting reasons and errors: `{routes.REFERENCE}` in the service's
repository. A Python client with tool executors: `client/` there (`docs/client.md`)."""


#: What a page on an allowed origin may send and read (AGENTRUN_CORS_ORIGINS). No
#: credentials (cookies): the API takes bearer keys and browser tokens, not cookies.
CORS_REQUEST_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"]
CORS_RESPONSE_HEADERS = ["Location", "Idempotent-Replayed", "Wait-Outcome", "Retry-After"]

Lifespan = Callable[[FastAPI], AbstractAsyncContextManager[None]]


def create_api(
    settings: Settings,
    lifespan: Lifespan,
    too_large: Mapping[str, ASGIApp] | None = None,
    *,
    authenticator: Authenticator,
    clock: Clock,
    grants: Grants | None = None,
    run_tokens: RunTokens | None = None,
    routers: Sequence[APIRouter] = (),
) -> FastAPI:
    """The API; `lifespan` must set `app.state.service` (app.service.runs.RunService),
    `app.state.reads` (app.service.reads.RunReads), `app.state.event_hub`
    (app.service.live.EventHub) and what `routers` read, for as long as the app serves.
    `too_large`: who answers a body over the limit under a path prefix (the dashboard's
    page under /admin) instead of the JSON problem. `authenticator`: who a bearer key is
    (the lifespan may replace it); `grants`: the roles and their permissions (default:
    open mode's admin alone); `run_tokens`: browser tokens (the lifespan may set them;
    without, every bearer is tried as a key); `routers`: the features' routes (app.main
    mounts them: the limits', the tool queue's, approvals', app.tenancy's)."""
    app = FastAPI(
        title="agentrun-service",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=lifespan,
        # Every route may meet a database outage (app.api.unavailable).
        responses=problems.responses(503),
    )
    app.state.settings = settings
    app.state.clock = clock  # (the composition root's: every route reads time from it)
    app.state.authenticator = authenticator
    app.state.grants = grants if grants is not None else {ADMIN: frozenset(Permission)}
    app.state.run_tokens = run_tokens
    app.state.idempotency_in_flight = set()
    app.state.auth_throttle = FailureThrottle(
        settings.auth_failure_limit, settings.auth_failure_window, clock=clock
    )
    problems.install(app)
    openapi.install(app)
    app.include_router(routes.router)
    app.include_router(routes.callbacks)
    for router in routers:  # (the features' routes: the composition root names them)
        app.include_router(router)
    app.include_router(providers.router)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, pages=too_large)
    app.add_middleware(DatabaseUnavailable)  # sees every route's exceptions
    if settings.cors_origin_list:  # outermost: its headers go on every answer, 503s too
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origin_list,
            allow_methods=["GET", "POST"],
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_RESPONSE_HEADERS,
            max_age=600,
        )

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
        reads: RunReads = request.app.state.reads
        try:
            await reads.ready()
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
        responses={
            200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
            **problems.responses(401),
        },
        dependencies=[Depends(authorize(Permission.METRICS_READ))],
    )
    async def metrics(request: Request) -> PlainTextResponse:
        body = await render_metrics(request.app.state.reads, request.app.state.clock.now())
        return PlainTextResponse(body, media_type=CONTENT_TYPE_LATEST)

    @app.get("/problems/{code}", include_in_schema=False, response_class=HTMLResponse)
    async def problem_doc(code: str) -> HTMLResponse:
        if code not in CATALOGUE:
            return HTMLResponse("<h1>Unknown problem type</h1>", status_code=404)
        status, title, meaning = CATALOGUE[code]
        return HTMLResponse(f"<h1>{title}</h1><p>HTTP {status}.</p><p>{meaning}</p>")

    return app
