"""The MCP executor: the tools of any MCP server, served to runs through the official `mcp`
SDK, so existing MCP tools run behind the service unchanged.

```python
registry = ToolRegistry()
async with MCPServerStdio("npx", ["-y", "@modelcontextprotocol/server-everything"]) as server:
    server.register(registry)                    # its tools, beside any Python function
    run = await client.run("...", tools=registry, model=...)
```

A connection lists the server's tools and turns each into a registry entry (its name, with
an optional prefix and made to fit the service's names, its description, its `inputSchema`
as the JSON schema); the entries answer calls with `tools/call`, so they work with every
executor that hands the registry its calls (inline, webhook, queue). The session is held by
a task of its own on the event loop that connected (`async with`), or on a thread of its own
(`with`, for sync code); calls from any other loop or thread are handed to it. A session
that dropped (the process ended, the HTTP server forgot it) is opened again for the next
call. Needs the `mcp` extra.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import Any, Self, TextIO, TypedDict, TypeVar, Unpack, cast

try:
    import httpx2
    import mcp
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp.types import CallToolResult, RequestParamsMeta, TextContent
    from mcp.types import Tool as MCPToolSpec
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "agentrun_client.mcp needs the official MCP SDK: pip install 'agentrun-client[mcp]'"
    ) from exc

from agentrun_client._mcp_session import MCPConnectionError, Session, cause
from agentrun_client.models import ToolResult
from agentrun_client.tools import TOOL_NAME, BaseTool, ToolCallContext, ToolRegistry, _Limit

__all__ = [
    "MCPConnectionError",
    "MCPOptions",
    "MCPServer",
    "MCPServerStdio",
    "MCPServerStreamableHTTP",
    "MCPTool",
    "tool_output",
]

log = logging.getLogger("agentrun_client.mcp")
R = TypeVar("R")
CONNECTION_CLOSED = -32000  # the SDK's code for a session whose transport ended
REQUEST_TIMEOUT = -32001
Include = Collection[str] | Callable[[MCPToolSpec], bool]


def tool_output(result: CallToolResult, *, structured: bool = False) -> Any:
    """A `tools/call` result as a tool output: the text of its content blocks; a JSON list
    of the blocks when some are not text (images, audio, resources); its
    `structuredContent` (JSON) when `structured` is set, or when there is no content."""
    if structured and result.structured_content is not None:
        return result.structured_content
    blocks = result.content
    if not blocks and result.structured_content is not None:
        return result.structured_content
    if all(isinstance(b, TextContent) for b in blocks):
        return "\n".join(cast(TextContent, b).text for b in blocks)
    return [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in blocks]


def _service_name(name: str) -> str:
    """`name` within the service's tool names (1-64 of [a-zA-Z0-9_-])."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "_"


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):  # a provider that sent the arguments as JSON text
        arguments = json.loads(arguments) if arguments.strip() else {}
    if arguments is None:
        return {}
    if not isinstance(arguments, dict):
        raise ValueError(f"the arguments are not a JSON object (got {arguments!r})")
    return arguments


class MCPTool(BaseTool):
    """One tool of an MCP server as a registry entry; `spec` is the server's definition and
    `mcp_name` the name it is called by there."""

    def __init__(self, server: MCPServer, spec: MCPToolSpec, name: str) -> None:
        self.server = server
        self.spec = spec
        self.mcp_name = spec.name
        self.name = name
        self.description = spec.description or spec.title or ""
        self.parameters = dict(spec.input_schema)
        self.timeout = server.timeout

    async def call(self, arguments: Any, context: ToolCallContext) -> ToolResult:
        try:
            return await self.server._on_own_loop(self.server._execute(self, arguments, context))
        except MCPConnectionError as exc:  # not connected, or closed
            text = f"Tool {self.name!r} failed: {exc}"
            return ToolResult(tool_call_id=context.call_id, output=text, is_error=True)


class MCPOptions(TypedDict, total=False):
    """What every kind of MCP server takes (see `MCPServer`)."""

    prefix: str
    include: Include | None
    exclude: Collection[str]
    timeout: float | None
    connect_timeout: float | None
    max_concurrency: int | None
    structured: bool
    client_options: Mapping[str, Any] | None


class _CallTimeout(TimeoutError):
    """A call outlived its timeout (not a timeout inside the SDK)."""


class MCPServer:
    """A connection to one MCP server whose tools become registry entries. Use
    `MCPServerStdio` or `MCPServerStreamableHTTP`.

    `prefix` goes before each tool's name (then characters the service does not allow in
    names become `_`); `include` keeps the tools of these names (or those a predicate on
    the SDK's `Tool` accepts), `exclude` drops tools by name. `timeout` bounds each call
    (seconds; the registry's timeout when None), `connect_timeout` each connection,
    `max_concurrency` the calls in flight on this server. `structured`: answer with a
    result's `structuredContent` (JSON) when it has one, not the text of its content.
    `client_options` go to the SDK's `mcp.Client` (`mode`, callbacks, `client_info`, ...).
    """

    def __init__(self, *, name: str, **options: Unpack[MCPOptions]) -> None:
        self.name = name
        self._named = False
        self.prefix = options.get("prefix", "")
        self.include = options.get("include")
        self.exclude = frozenset(options.get("exclude", ()))
        self.timeout = options.get("timeout")
        self.connect_timeout = options.get("connect_timeout", 30.0)
        self.structured = options.get("structured", False)
        self._options = dict(options.get("client_options") or {})
        self._limit = _Limit(options.get("max_concurrency"))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock: asyncio.Lock | None = None
        self._session: Session | None = None
        self._closed = False
        self.connects = 0  # sessions opened: more than one after a reconnect
        self.tools: list[MCPTool] = []

    async def _transport(
        self, stack: AsyncExitStack, session: Session
    ) -> AbstractAsyncContextManager[Any]:
        """A new transport to the server (what it needs beside is entered on `stack`)."""
        raise NotImplementedError

    # The connection's lifetime.

    async def connect(self) -> None:
        """Open the session on the running loop and list the server's tools."""
        if self._loop is not None:
            raise RuntimeError(f"MCP server {self.name} is already connected")
        self._loop = asyncio.get_running_loop()
        self._lock = asyncio.Lock()
        self._closed = False
        try:
            self.tools = await self._entries()
        except BaseException:
            await self.aclose()
            raise

    async def aclose(self) -> None:
        """End the session (a stdio server's process ends with it)."""
        self._closed = True
        session, self._session = self._session, None
        if session is not None:
            await session.close()
        if self._thread is None:
            self._loop = None

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        """Connect on a thread of its own (for sync code: `Client.run`, ...)."""
        if self._loop is not None:
            raise RuntimeError(f"MCP server {self.name} is already connected")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name=f"mcp {self.name}", daemon=True)
        thread.start()
        self._thread = thread
        try:
            asyncio.run_coroutine_threadsafe(self.connect(), loop).result()
        except BaseException:
            self._stop_thread(loop)
            raise
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """`aclose` for a connection made with `with`."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
        self._stop_thread(loop)

    def _stop_thread(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join()
        loop.close()
        self._thread = None
        self._loop = None

    @property
    def connected(self) -> bool:
        """Whether a session is open now (after a drop, the next call opens one)."""
        return self._session is not None and self._session.live

    async def _on_own_loop(self, work: Coroutine[Any, Any, R]) -> R:
        """Run `work` on the loop that holds the session, from any loop or thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            work.close()
            raise MCPConnectionError(f"MCP server {self.name} is not connected")
        if loop is asyncio.get_running_loop():
            return await work
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))

    async def _client(self) -> tuple[Session, mcp.Client]:
        """The live session, opened first if there is none or the last one ended."""
        session = self._session
        if session is not None and session.live and session.client is not None:
            return session, session.client
        assert self._lock is not None
        async with self._lock:
            if self._closed:
                raise MCPConnectionError(f"MCP server {self.name} is closed")
            session = self._session
            if session is None or not session.live:
                if session is not None:
                    await session.close()  # the process is reaped, the HTTP session deleted
                    log.info("MCP server %s: reconnecting", self.name)
                self._session = None
                session = Session(self.name, self._transport, self._options)
                client = await session.open(self.connect_timeout)
                self._session = session
                self.connects += 1
                if not self._named and client.server_info is not None:
                    self.name = session.name = client.server_info.name  # its own name
            assert session.client is not None
            return session, session.client

    # Tools and calls.

    async def list_tools(self) -> list[MCPToolSpec]:
        """Every tool the server lists now (all pages)."""
        return await self._on_own_loop(self._list_tools())

    async def _list_tools(self) -> list[MCPToolSpec]:
        _, client = await self._client()
        tools: list[MCPToolSpec] = []
        cursor: str | None = None
        while True:
            page = await client.list_tools(cursor=cursor)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return tools

    def _wanted(self, spec: MCPToolSpec) -> bool:
        if spec.name in self.exclude:
            return False
        if self.include is None:
            return True
        if callable(self.include):
            return self.include(spec)
        return spec.name in self.include

    async def _entries(self) -> list[MCPTool]:
        entries: dict[str, MCPTool] = {}
        for spec in await self._list_tools():
            if not self._wanted(spec):
                continue
            name = _service_name(self.prefix + spec.name)
            if name in entries:
                raise ValueError(
                    f"MCP server {self.name}: tools {entries[name].mcp_name!r} and "
                    f"{spec.name!r} are both named {name!r} here; use include/exclude"
                )
            assert TOOL_NAME.match(name)
            entries[name] = MCPTool(self, spec, name)
        return list(entries.values())

    def register(self, registry: ToolRegistry) -> list[MCPTool]:
        """Add the server's tools (as listed at connection) to `registry`; a tool without
        a timeout of its own gets the registry's."""
        if self._loop is None:
            raise RuntimeError(f"MCP server {self.name} is not connected")
        for entry in self.tools:
            if entry.timeout is None:
                entry.timeout = registry.timeout
            registry.register(entry)
        return list(self.tools)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        meta: Any = None,
        timeout: float | None = None,
    ) -> CallToolResult:
        """`tools/call` by the server's own tool name, from any loop; opens the session
        again if it had ended. Raises `MCPError` (a protocol error from the server),
        `MCPConnectionError` (unreachable, or the session ended during the call),
        `TimeoutError` (after `timeout` seconds)."""
        call = self._call_tool(name, dict(arguments or {}), meta, timeout)
        return await self._on_own_loop(call)

    async def _call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        meta: RequestParamsMeta | None,
        timeout: float | None = None,
    ) -> CallToolResult:
        for attempt in range(2):
            session, client = await self._client()  # within `connect_timeout`
            deadline = asyncio.timeout(timeout)
            try:
                async with deadline:
                    return await client.call_tool(name, arguments, meta=meta)
            except TimeoutError as exc:
                if deadline.expired():
                    raise _CallTimeout from exc
                raise
            except MCPError as exc:
                if session.gone and attempt == 0:
                    continue  # refused, so not run: again on a new session
                if exc.error.code == CONNECTION_CLOSED:
                    await session.close()
                    why = "" if session.error is None else f" ({cause(session.error)})"
                    raise MCPConnectionError(
                        f"the session with MCP server {self.name} ended during the call{why}; "
                        "it may or may not have run"
                    ) from exc
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    async def _execute(self, tool: MCPTool, arguments: Any, context: ToolCallContext) -> ToolResult:
        def error(text: str) -> ToolResult:
            return ToolResult(tool_call_id=context.call_id, output=text, is_error=True)

        try:
            args = _arguments(arguments)
        except ValueError as exc:
            return error(f"Invalid arguments for tool {tool.name!r}: {exc}")
        ids = {"agentrun/run_id": context.run_id, "agentrun/call_id": context.call_id}
        meta = cast(RequestParamsMeta, ids)
        async with self._limit.hold():
            try:
                result = await self._call_tool(tool.mcp_name, args, meta, tool.timeout)
            except _CallTimeout:
                return error(f"Tool {tool.name!r} timed out after {tool.timeout:g} s")
            except MCPConnectionError as exc:
                return error(f"Tool {tool.name!r} failed: {exc}")
            except MCPError as exc:
                if exc.error.code == REQUEST_TIMEOUT:
                    return error(f"Tool {tool.name!r} timed out: {exc.error.message}")
                return error(
                    f"Tool {tool.name!r} failed on MCP server {self.name}: "
                    f"{exc.error.message} (error {exc.error.code})"
                )
            except Exception as exc:
                return error(f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}")
        output = tool_output(result, structured=self.structured)
        return ToolResult(tool_call_id=context.call_id, output=output, is_error=result.is_error)


class MCPServerStdio(MCPServer):
    """An MCP server started as a process of its own, spoken to over its stdin/stdout:
    `command` and `args`; `env` is added to the SDK's few inherited variables (`PATH`,
    `HOME`, ...); the process's stderr goes to `errlog` (this process's by default)."""

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        errlog: TextIO | None = None,
        name: str | None = None,
        **options: Unpack[MCPOptions],
    ) -> None:
        super().__init__(name=name or " ".join([command, *args]), **options)
        self._named = name is not None
        self.params = StdioServerParameters(
            command=command, args=list(args), env=dict(env) if env else None, cwd=cwd
        )
        self.errlog = errlog

    async def _transport(
        self, stack: AsyncExitStack, session: Session
    ) -> AbstractAsyncContextManager[Any]:
        return stdio_client(self.params, errlog=self.errlog or sys.stderr)


class MCPServerStreamableHTTP(MCPServer):
    """An MCP server at a streamable HTTP `url`; `headers` go with every request
    (`Authorization`, ...); `http_timeout` bounds connecting and writing, reads may take
    up to five minutes (a server may hold a response stream open)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_timeout: float = 30.0,
        name: str | None = None,
        **options: Unpack[MCPOptions],
    ) -> None:
        super().__init__(name=name or url, **options)
        self._named = name is not None
        self.url = url
        self.headers = dict(headers or {})
        self.http_timeout = http_timeout

    async def _transport(
        self, stack: AsyncExitStack, session: Session
    ) -> AbstractAsyncContextManager[Any]:
        async def forgotten(response: httpx2.Response) -> None:
            # A 404 to a request with a session id: the server no longer knows the session
            # (it restarted); the spec's answer is a new session.
            if response.status_code == 404 and "mcp-session-id" in response.request.headers:
                session.gone = True

        http = httpx2.AsyncClient(
            headers=self.headers,
            timeout=httpx2.Timeout(self.http_timeout, read=300.0),
            event_hooks={"response": [forgotten]},
        )
        await stack.enter_async_context(http)
        return streamable_http_client(self.url, http_client=http)
