"""One session with an MCP server for `agentrun_client.mcp`: held open by a task of its
own (the SDK's contexts are entered and left in one task, and a transport that fails ends
only that task), and told when it has ended so that the next call opens another."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any, Self

import mcp

from agentrun_client.errors import AgentrunError

log = logging.getLogger("agentrun_client.mcp")


class MCPConnectionError(AgentrunError):
    """The MCP server could not be reached, or the session ended during a call."""


def cause(exc: BaseException) -> str:
    """The exception of a task group that one failure ended, as `Type: message`."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class _WatchedRead:
    """A transport's read stream that tells when it ends (the server went away)."""

    def __init__(self, inner: Any, on_end: Callable[[], None]) -> None:
        self._inner = inner
        self._on_end = on_end

    def __getattr__(self, name: str) -> Any:  # `last_context`, what else the SDK reads
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except Exception:  # EndOfStream, ClosedResourceError, BrokenResourceError
            self._on_end()
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _WatchedRead:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except Exception:  # StopAsyncIteration, ClosedResourceError, ...
            self._on_end()
            raise

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> bool | None:
        await self._inner.aclose()
        return None


class _Watched(AbstractAsyncContextManager[Any]):
    """A transport (the SDK's `Transport`) whose end is reported to `on_end`."""

    def __init__(self, inner: AbstractAsyncContextManager[Any], on_end: Callable[[], None]):
        self._inner = inner
        self._on_end = on_end

    async def __aenter__(self) -> Any:
        read, write = await self._inner.__aenter__()
        return _WatchedRead(read, self._on_end), write

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self._inner.__aexit__(*exc)


Connect = Callable[[AsyncExitStack, "Session"], Awaitable[AbstractAsyncContextManager[Any]]]


class Session:
    """`connect(stack, session)` makes the transport (what it needs beside goes on
    `stack`); `options` go to `mcp.Client`. `gone` is set when the server said it no longer
    knows the session (HTTP 404): calls refused so did not run."""

    def __init__(self, name: str, connect: Connect, options: Mapping[str, Any]) -> None:
        self.name = name
        self._connect = connect
        self._options = options
        self.ended = asyncio.Event()  # the transport ended, or `close` was called
        self.gone = False
        self.client: mcp.Client | None = None
        self.error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def live(self) -> bool:
        return self.client is not None and not self.ended.is_set() and not self.gone

    async def open(self, timeout: float | None) -> mcp.Client:
        ready: asyncio.Future[mcp.Client] = asyncio.get_running_loop().create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())  # seen, if unawaited
        self._task = asyncio.create_task(self._hold(ready), name=f"mcp {self.name}")
        try:
            async with asyncio.timeout(timeout):
                self.client = await asyncio.shield(ready)
        except TimeoutError:
            await self.close()
            raise MCPConnectionError(
                f"MCP server {self.name} did not answer within {timeout:g} s"
            ) from None
        except BaseException:
            await self.close()
            raise
        return self.client

    async def _hold(self, ready: asyncio.Future[mcp.Client]) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = _Watched(await self._connect(stack, self), self.ended.set)
                client = mcp.Client(transport, **self._options)
                await stack.enter_async_context(client)
                ready.set_result(client)
                await self.ended.wait()
        except BaseException as exc:  # the background task must not raise
            self.error = exc
            if not ready.done():
                why = cause(exc)
                ready.set_exception(
                    MCPConnectionError(f"could not connect to MCP server {self.name}: {why}")
                )
            else:
                log.warning("MCP server %s: the session ended: %s", self.name, cause(exc))
        finally:
            self.ended.set()

    async def close(self) -> None:
        """End the session and wait until it has (a stdio server's process is reaped)."""
        self.ended.set()
        if self._task is not None:
            if self.client is None:
                self._task.cancel()  # still connecting: nothing else would stop it
            with contextlib.suppress(BaseException):
                await self._task
