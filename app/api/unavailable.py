"""A database outage answers 503, on every route, instead of a bare 500.

A pure ASGI middleware, outermost in the application: it sees every exception a route,
a dependency, another middleware or a streaming body raises. An outage (as
`app.service.errors.is_unavailable` recognises it) becomes `503 application/problem+json`
(`/problems/service-unavailable`) with `Retry-After`, and the connection stays usable
(a 500 from Starlette's error middleware closes it). When the response has already
started (an SSE stream), the body is ended cleanly: the client reconnects with
`Last-Event-ID` and gets the 503 until the database is back. Any other exception goes
on to the error middleware as before.
"""

from __future__ import annotations

import structlog
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.api.problems import problem
from app.service.errors import RETRY_AFTER_SECONDS, is_unavailable

log = structlog.get_logger("agentrun.api")


class DatabaseUnavailable:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        ended = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, ended
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                ended = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if not is_unavailable(exc):
                raise
            log.warning(
                "database unavailable",
                path=scope.get("path"),
                error=type(exc).__name__,
                response_started=started,
            )
            if not started:
                response = problem(
                    "service-unavailable",
                    f"the database is not reachable ({type(exc).__name__}); retry shortly",
                    instance=scope.get("path"),
                    headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
                )
                await response(scope, receive, send)
            elif not ended:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
