"""Who the caller is and whether it may, and the request-size limit. Callers are
resolved through what the composition root hands `create_api` (`app.service.principals`:
an `Authenticator` for bearer keys, `RunTokens` for browser tokens, the roles' `Grants`);
this module knows no implementation of them."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Awaitable, Callable, Mapping
from typing import Annotated

from fastapi import Query, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem
from app.service.errors import RunNotFound, ServiceError
from app.service.principals import (
    OPEN_MODE,
    Authenticator,
    BrowserTokenInvalid,
    Grants,
    Permission,
    Principal,
    RunTokens,
    roles_with,
)

#: The query parameter that carries a browser token where no header can (EventSource).
ACCESS_TOKEN = "access_token"


class Unauthorized(ServiceError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"


class Forbidden(ServiceError):
    code = "forbidden"
    status = 403
    title = "Permission missing"

    def __init__(self, permission: Permission, principal: Principal, grants: Grants) -> None:
        roles = ", ".join(roles_with(permission, grants))
        super().__init__(
            f"this operation needs the permission {permission.value} "
            f"(held by: {roles}); the caller's role is {principal.role}",
            permission=permission.value,
            role=principal.role,
        )


class Confined(Forbidden):
    """A browser token used on an operation it does not cover (403, as a missing role)."""

    def __init__(self, permission: Permission, principal: Principal) -> None:
        ServiceError.__init__(
            self,
            "a browser token may only read its run's events, wait and messages",
            permission=permission.value,
            role=principal.role,
        )


class TooManyFailedAuthentications(ServiceError):
    code = "too-many-failed-authentications"
    status = 429
    title = "Too many failed authentications"

    def __init__(self, retry_after: float) -> None:
        super().__init__(
            "too many failed authentications from this address; "
            f"retry in {math.ceil(retry_after)} s"
        )
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(math.ceil(self.retry_after))}


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def check_throttle(request: Request) -> str:
    """The client's address; refuses it (429) while it is throttled."""
    address = client_address(request)
    wait = request.app.state.auth_throttle.retry_after(address)
    if wait is not None:
        raise TooManyFailedAuthentications(wait)
    return address


def bearer_of(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    presented = presented.strip()
    if scheme.lower() != "bearer" or not presented:
        return None
    return presented


def forbidden(request: Request, permission: Permission, principal: Principal) -> Forbidden:
    """The 403 for `principal` lacking `permission`, naming the roles that hold it."""
    return Forbidden(permission, principal, request.app.state.grants)


async def authenticate(request: Request, query_token: str | None = None) -> Principal:
    """The caller; refuses a missing or wrong key (401, throttled) unless in open mode.
    A browser token (bearer, or `query_token`: `?access_token=` where a route accepts it)
    is verified even in open mode, so a frontend meets the same answers everywhere."""
    cached: Principal | None = getattr(request.state, "principal", None)
    if cached is not None:
        return cached
    authenticator: Authenticator = request.app.state.authenticator
    tokens: RunTokens | None = request.app.state.run_tokens
    presented = bearer_of(request)
    if presented is None and query_token:
        if tokens is None or not tokens.recognises(query_token):
            request.app.state.auth_throttle.failed(check_throttle(request))
            raise BrowserTokenInvalid(
                f"`{ACCESS_TOKEN}` takes a browser token only; send an API key as "
                "`Authorization: Bearer <key>`"
            )
        presented = query_token
    if presented is not None and tokens is not None and tokens.recognises(presented):
        address = check_throttle(request)
        try:
            principal = await tokens.verify(presented)
        except BrowserTokenInvalid:
            request.app.state.auth_throttle.failed(address)
            raise
    elif await authenticator.open_mode():
        principal = OPEN_MODE
    else:
        address = check_throttle(request)
        found = None if presented is None else await authenticator.authenticate(presented)
        if found is None:
            request.app.state.auth_throttle.failed(address)
            raise Unauthorized("a valid bearer API key is required")
        principal = found
    request.state.principal = principal
    return principal


def _check(request: Request, principal: Principal, permission: Permission, runs: bool) -> None:
    if principal.run_id is not None:  # a browser token: its run's reads only
        if not runs:
            raise Confined(permission, principal)
        run_id = request.path_params.get("run_id")
        if run_id != principal.run_id:  # another run is one that does not exist
            raise RunNotFound(f"no run with id {run_id}")
    if not principal.can(permission):
        raise forbidden(request, permission, principal)


def authorize(
    permission: Permission, *, browser: bool = False
) -> Callable[..., Awaitable[Principal]]:
    """A dependency: the caller, who must hold `permission` (403 names it otherwise).
    With `browser`, the route also takes a browser token for its `{run_id}`, as a bearer
    header or as `?access_token=`; every other route refuses one (403). The OpenAPI
    document reads `permission` and `browser` off it (`app.api.openapi`)."""
    if browser:

        async def dependency(
            request: Request,
            access_token: Annotated[
                str | None,
                Query(
                    description="a browser token (`POST /v1/runs/{run_id}/browser-tokens`), "
                    "for clients that cannot send headers (EventSource); never an API key"
                ),
            ] = None,
        ) -> Principal:
            principal = await authenticate(request, access_token)
            _check(request, principal, permission, runs=True)
            return principal

    else:

        async def dependency(request: Request) -> Principal:  # type: ignore[misc]
            principal = await authenticate(request)
            _check(request, principal, permission, runs=False)
            return principal

    dependency.permission = permission  # type: ignore[attr-defined]
    dependency.browser = browser  # type: ignore[attr-defined]
    return dependency


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BodyLimit:
    """Refuses bodies over `limit` bytes before the app parses them (413), whether the
    size is announced by Content-Length or only found while reading a chunked body (the
    body is read up to the limit first, then replayed to the app). Under a path prefix in
    `pages` that prefix's app answers instead of the JSON problem (the dashboard's page)."""

    def __init__(
        self, app: ASGIApp, limit: int, pages: Mapping[str, ASGIApp] | None = None
    ) -> None:
        self.app = app
        self.limit = limit
        self.pages = dict(pages or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", []):
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await self._refuse(scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        for prefix, page in self.pages.items():
            if path == prefix or path.startswith(prefix + "/"):
                await page(scope, receive, send)
                return
        response = problem("payload-too-large", f"the request body exceeds {self.limit} bytes")
        await response(scope, receive, send)
