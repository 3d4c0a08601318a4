"""Bearer API keys (compared by app.service.keys) and the request-size limit."""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Mapping

from fastapi import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem
from app.service.errors import ServiceError
from app.service.keys import actor_of, key_matches


class Unauthorized(ServiceError):
    code = "unauthorized"
    status = 401
    title = "Unauthorized"


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


async def require_api_key(request: Request) -> str:
    """The caller's actor tag; refuses a missing or wrong key unless in open mode."""
    keys: list[str] = request.app.state.settings.api_key_list
    if not keys:
        return actor_of(None)
    address = check_throttle(request)
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented or not key_matches(presented.strip(), keys):
        request.app.state.auth_throttle.failed(address)
        raise Unauthorized("a valid bearer API key is required")
    return actor_of(presented.strip())


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
