"""The A2A routes of every agent, built by the SDK's route helpers over `RunTasks`, each
behind the service's authentication: `/a2a/{agent}` (JSON-RPC), `/a2a/{agent}/message:send`
and the rest of HTTP+JSON, and the card at `/a2a/{agent}/.well-known/agent-card.json`. A
refusal before the SDK's dispatcher (a wrong key, a missing role, an agent the tenant does
not have) is answered in the binding's own error shape with its HTTP status."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

from a2a.server.context import ServerCallContext
from a2a.server.routes import (
    ServerCallContextBuilder,
    create_agent_card_routes,
    create_jsonrpc_routes,
    create_rest_routes,
)
from a2a.utils.constants import VERSION_HEADER
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.api.security import authenticate
from app.protocols.a2a.card import card_of
from app.protocols.a2a.handler import Call, RunTasks
from app.protocols.sessions import Sessions
from app.service.errors import AgentNotFound, ServiceError
from app.service.principals import Permission
from app.service.schemas import AGENT_NAME
from app.settings import Settings

PREFIX = "/a2a/{agent}"
CARD = f"{PREFIX}/.well-known/agent-card.json"
Endpoint = Callable[[Request], Awaitable[Response]]
_NAME = re.compile(AGENT_NAME)
#: google.rpc's status names of the refusals (the HTTP+JSON binding's errors).
RPC_STATUS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND"}


class Contexts(ServerCallContextBuilder):
    """The SDK's call context: the `Call` the route authenticated, and of the headers
    only the protocol version (never the key)."""

    def build(self, request: Request) -> ServerCallContext:
        version = request.headers.get(VERSION_HEADER)
        return ServerCallContext(
            state={
                "call": request.state.a2a_call,
                "headers": {VERSION_HEADER: version} if version else {},
            }
        )


async def caller(request: Request) -> Call:
    """Who asks, of which agent (raises the service's refusals)."""
    principal = await authenticate(request)
    if principal.run_id is not None or not principal.can(Permission.RUNS_READ):
        raise Refused("an API key that reads runs is required (not a browser token)")
    name = request.path_params["agent"]
    if not _NAME.fullmatch(name):
        raise AgentNotFound(f"no agent {name!r}")
    sessions: Sessions = request.app.state.sessions
    await sessions.agent(name, principal.tenant)
    return Call(principal, name, request)


class Refused(ServiceError):
    code = "forbidden"
    status = 403
    title = "Permission missing"


def jsonrpc_error(exc: ServiceError) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32600, "message": exc.detail, "data": {"code": exc.code}},
    }
    return JSONResponse(body, status_code=exc.status, headers=_headers(exc))


def rest_error(exc: ServiceError) -> Response:
    status = RPC_STATUS.get(exc.status, "RESOURCE_EXHAUSTED" if exc.status == 429 else "UNKNOWN")
    body = {
        "error": {
            "code": exc.status,
            "status": status,
            "message": exc.detail,
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": exc.code.upper().replace("-", "_"),
                    "domain": "agentrun",
                }
            ],
        }
    }
    return JSONResponse(body, status_code=exc.status, headers=_headers(exc))


def _headers(exc: ServiceError) -> dict[str, str]:
    headers = dict(exc.headers() or {})
    if exc.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return headers


def guarded(endpoint: Endpoint, refuse: Callable[[ServiceError], Response]) -> Endpoint:
    async def route(request: Request) -> Response:
        try:
            request.state.a2a_call = await caller(request)
        except ServiceError as exc:
            return refuse(exc)
        return await endpoint(request)

    return route


async def card(request: Request) -> Response:
    """The agent's card (behind the key: an agent is a tenant's), served by the SDK's
    card route (its ETag and 304)."""
    call = await caller(request)  # (a refusal: the API's problem document)
    agent = await call.sessions.agent(call.agent, call.principal.tenant)
    settings: Settings = request.app.state.settings
    base = (
        settings.public_url if "public_url" in settings.model_fields_set else str(request.base_url)
    )
    served = create_agent_card_routes(card_of(agent, base), card_url=CARD)[0]
    response: Response = await served.endpoint(request)
    return response


def routes() -> list[Route]:
    handler = RunTasks()
    contexts = Contexts()
    out = [Route(CARD, card, methods=["GET"])]
    for route in create_jsonrpc_routes(handler, PREFIX, context_builder=contexts):
        assert isinstance(route, Route)
        out.append(Route(route.path, guarded(route.endpoint, jsonrpc_error), methods=["POST"]))
    for made in create_rest_routes(handler, context_builder=contexts, path_prefix=PREFIX):
        if isinstance(made, Route):  # (not the SDK's `/{tenant}` mount: a tenant is the key's)
            methods = sorted((made.methods or set()) - {"HEAD"})
            out.append(Route(made.path, guarded(made.endpoint, rest_error), methods=methods))
    return out
