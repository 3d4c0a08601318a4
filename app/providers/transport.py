"""The thin async HTTP transport shared by the wire adapters (httpx, JSON via orjson).

A transport sends one request and maps failures to `ProviderError`; it never retries (the
worker does, durably, with `app.providers.backoff`). Base URL and key come from the
constructor (deployment configuration), never from a run's request body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar, Protocol, Self
from urllib.parse import urlencode

import httpx
import orjson

from app.clock import SYSTEM_CLOCK, Clock
from app.core import Usage
from app.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderTurn,
    StreamItem,
    TextDelta,
    TurnComplete,
    UsageReport,
)
from app.providers.common import error_from_response, first_header, malformed
from app.providers.sse import SSEEvent, SSEParser

#: The headers a key travels in, one per auth scheme of a profile (`app.providers.profiles`).
AUTH_HEADERS = frozenset({"authorization", "api-key", "x-api-key"})


class StreamDecoder(Protocol):
    """The incremental decoder every wire module provides. `usage_changed` says the
    usage reported so far moved with the last event fed (`usage_so_far` has it): the
    stream then yields a `UsageReport`."""

    done: bool
    usage_changed: bool

    def usage_so_far(self) -> Usage: ...

    def feed(self, event: SSEEvent) -> list[TextDelta]: ...

    def finish(self) -> ProviderTurn: ...


class HttpProvider:
    """Base class: subclasses give the path, auth headers and codec hooks."""

    name: str = ""
    path: ClassVar[str] = ""
    request_id_headers: ClassVar[tuple[str, ...]] = ("x-request-id", "request-id")

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        client: httpx.AsyncClient | None = None,
        headers: dict[str, str] | None = None,
        query: Mapping[str, str] | None = None,
        auth: str | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._query = urlencode(dict(query or {}))
        self._auth = auth  # a profile's scheme; None: the wire's own (`auth_headers`)
        self.api_key = api_key
        self.timeout = timeout
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(timeout=httpx.Timeout(timeout))
        self._extra_headers = dict(headers or {})
        self._clock = clock

    # --- hooks -------------------------------------------------------------------------

    def auth_headers(self) -> dict[str, str]:
        raise NotImplementedError

    def encode(self, request: ModelRequest, *, stream: bool) -> dict[str, Any]:
        raise NotImplementedError

    def decode(self, body: dict[str, Any], *, request_id: str | None) -> ProviderTurn:
        raise NotImplementedError

    def stream_decoder(self, *, request_id: str | None) -> StreamDecoder:
        raise NotImplementedError

    # --- plumbing ------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return self.base_url + self.path + (f"?{self._query}" if self._query else "")

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }
        headers.update(self._extra_headers)
        wire = self.auth_headers()
        if self._auth is None:
            headers.update(wire)
            return headers
        headers.update({k: v for k, v in wire.items() if k.lower() not in AUTH_HEADERS})
        if self.api_key and self._auth == "bearer":
            headers["authorization"] = f"Bearer {self.api_key}"
        elif self.api_key and self._auth in ("api-key", "x-api-key"):
            headers[self._auth] = self.api_key
        return headers

    def _request_id(self, response: httpx.Response) -> str | None:
        return first_header(response.headers, *self.request_id_headers)

    def _transport_error(self, exc: httpx.HTTPError) -> ProviderError:
        if isinstance(exc, httpx.LocalProtocolError):  # (its text quotes the header: a key)
            return ProviderError(
                f"{self.name} request not sent: the HTTP client refuses a header value "
                "(a key with a line break or space?)",
                retryable=False,  # (the same request is refused again)
                provider=self.name,
            )
        if isinstance(exc, httpx.TimeoutException):
            message = f"{self.name} request timed out ({type(exc).__name__})"
        else:
            message = f"{self.name} connection error: {type(exc).__name__}: {exc}"
        return ProviderError(message, retryable=True, provider=self.name)

    def _status_error(self, response: httpx.Response) -> ProviderError:
        return error_from_response(
            self.name, response.status_code, response.content, response.headers, self._clock.epoch()
        )

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        content = orjson.dumps(self.encode(request, stream=False))
        try:
            response = await self._client.post(
                self.url, content=content, headers=self._headers(False)
            )
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        if response.status_code >= 400:
            raise self._status_error(response)
        try:
            body = orjson.loads(response.content)
        except orjson.JSONDecodeError as exc:
            raise ProviderError(
                f"{self.name} returned a body that is not JSON",
                status=response.status_code,
                retryable=True,
                provider=self.name,
            ) from exc
        if not isinstance(body, dict):
            raise ProviderError(
                f"{self.name} returned a JSON body that is not an object",
                status=response.status_code,
                provider=self.name,
            )
        try:
            return self.decode(body, request_id=self._request_id(response))
        except ValueError as exc:  # a value no run can hold (`app.core.InvalidJsonValue`)
            raise malformed(self.name, "response", exc) from exc

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        content = orjson.dumps(self.encode(request, stream=True))
        try:
            async with self._client.stream(
                "POST", self.url, content=content, headers=self._headers(True)
            ) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise self._status_error(response)
                decoder = self.stream_decoder(request_id=self._request_id(response))
                parser = SSEParser()
                async for line in response.aiter_lines():
                    event = parser.feed_line(line)
                    if event is None:
                        continue
                    for delta in decoder.feed(event):
                        yield delta
                    if decoder.usage_changed:
                        decoder.usage_changed = False
                        yield UsageReport(decoder.usage_so_far())
                    if decoder.done:
                        break
                if not decoder.done:
                    tail = parser.close()
                    if tail is not None:
                        for delta in decoder.feed(tail):
                            yield delta
                turn = decoder.finish()
        except httpx.HTTPError as exc:
            raise self._transport_error(exc) from exc
        except ValueError as exc:  # a value no run can hold (`app.core.InvalidJsonValue`)
            raise malformed(self.name, "stream", exc) from exc
        yield TurnComplete(turn)

    async def aclose(self) -> None:
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
