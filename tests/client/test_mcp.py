"""The MCP executor against a real MCP server (tests/client/mcp_server.py, written with the
official SDK) started as a process of its own: over stdio, and over streamable HTTP on
127.0.0.1. Tools become registry entries; results, errors and timeouts become tool results;
a dropped session is opened again."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest

from agentrun_client import TERMINAL, RunStatus, ToolCall, ToolRegistry, ToolResult
from agentrun_client.mcp import (
    MCPConnectionError,
    MCPServer,
    MCPServerStdio,
    MCPServerStreamableHTTP,
)
from agentrun_client.webhooks import executor_app
from tests.client.conftest import SECRET, Live, scripted
from tests.e2e.processes import wait_until
from tests.helpers import wait_for
from tests.mocks.uvicorn_thread import serve_in_thread
from tests.ports import free_port

SERVER = str(Path(__file__).with_name("mcp_server.py"))


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    """Where the stdio server's stderr goes."""
    with open(tmp_path / "mcp-server.log", "w") as f:
        yield f


def stdio(errlog: TextIO, **options: Any) -> MCPServerStdio:
    return MCPServerStdio(sys.executable, [SERVER, "stdio"], errlog=errlog, **options)


class HTTPServer:
    """The test server over streamable HTTP on a loopback port, restartable on that port."""

    def __init__(self, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with open(self.log, "ab") as log:
            args = [sys.executable, SERVER, "http", str(self.port)]
            self.proc = proc = subprocess.Popen(args, stdout=log, stderr=log)

        def listening() -> bool:
            assert proc.poll() is None, self.log.read_text()
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_until(listening, 30, "the MCP server to listen")

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[HTTPServer]:
    server = HTTPServer(tmp_path / "mcp-http.log")
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def connected(server: MCPServer) -> bool:
    return server.connected


def call(name: str, arguments: object = None, call_id: str = "call_1") -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments=arguments if arguments is not None else {})


async def run_one(registry: ToolRegistry, name: str, arguments: object = None) -> ToolResult:
    return await registry.execute(call(name, arguments), run_id="run_1")


async def test_tools_become_registry_entries_beside_python_functions(errlog: TextIO) -> None:
    registry = ToolRegistry()

    @registry.tool
    def local(x: int) -> int:
        return x

    async with stdio(errlog, prefix="t.", exclude={"crash"}) as server:
        entries = server.register(registry)
        assert server.name == "agentrun-test-tools"  # as the server calls itself
    names = [d["name"] for d in registry.definitions()]
    assert names[0] == "local" and "t_add" in names and "t_crash" not in names
    assert "t_math_mul" in names  # "t.math.mul", in the service's characters
    by_name = {e.name: e for e in entries}
    assert by_name["t_math_mul"].mcp_name == "math.mul"
    echo = registry.get("t_echo")
    assert echo is not None and echo.description == "Say the text back, unstructured."
    schema = echo.definition()["parameters"]
    assert schema["required"] == ["text"]
    assert schema["properties"]["text"]["description"] == "what to say back"

    only = ToolRegistry()
    async with stdio(errlog, include=lambda spec: spec.name.startswith("e")) as server:
        server.register(only)
    assert sorted(t.name for t in only) == ["echo", "explode"]


async def test_results_errors_and_timeouts_become_tool_results(errlog: TextIO) -> None:
    registry = ToolRegistry()
    async with stdio(errlog, timeout=1) as server:
        server.register(registry)
        add = await run_one(registry, "add", {"a": 1, "b": 2})
        assert add == ToolResult(tool_call_id="call_1", output="3.0")
        assert (await run_one(registry, "lines", {"count": 2})).output == "line 1\nline 2"
        assert (await run_one(registry, "math_mul", '{"a": 2, "b": 4}')).output == "8.0"
        pixel = await run_one(registry, "pixel")
        assert pixel.output == [
            {"type": "text", "text": "a pixel"},
            {"type": "image", "data": "iQ==", "mimeType": "image/png"},
        ]
        errors = {
            "refuse": ({"reason": "no"}, "Error executing tool refuse: refused: no"),
            "explode": ({}, "Error executing tool explode"),
            "reject": ({}, "Tool 'reject' failed on MCP server agentrun-test-tools: "),
            "add": ({"a": "x", "b": 1}, "Error executing tool add: 1 validation error"),
            "sleep": ({"seconds": 5}, "Tool 'sleep' timed out after 1 s"),
            "echo": ([1], "Invalid arguments for tool 'echo': the arguments are not a JSON"),
        }
        for name, (arguments, text) in errors.items():
            result = await run_one(registry, name, arguments)
            assert result.is_error and result.output.startswith(text), result
        # The server is still there after a timed-out call.
        assert (await run_one(registry, "echo", {"text": "still"})).output == "still"
        # The run and call ids reach the server in the request's `_meta`.
        ids = await registry.execute(call("ids", call_id="call_9"), run_id="run_7")
        assert json.loads(ids.output) == {"agentrun/run_id": "run_7", "agentrun/call_id": "call_9"}
    closed = await run_one(registry, "add", {"a": 1, "b": 2})
    assert closed.is_error and "is not connected" in closed.output


async def test_structured_results_as_json(errlog: TextIO) -> None:
    registry = ToolRegistry()
    async with stdio(errlog, structured=True) as server:
        server.register(registry)
        forecast = await run_one(registry, "forecast", {"city": "Oslo"})
        assert forecast.output == {"city": "Oslo", "temperature": 21.5, "sky": "clear"}
        assert (await run_one(registry, "add", {"a": 1, "b": 2})).output == {"result": 3.0}
        lines = await run_one(registry, "lines", {"count": 1})  # no structured content
        assert lines.output == "line 1"


async def test_a_session_that_dropped_is_opened_again(errlog: TextIO) -> None:
    registry = ToolRegistry()
    async with stdio(errlog, env={"CALLER": "from-env"}) as server:
        server.register(registry)
        assert (await run_one(registry, "whoami")).output == "from-env"
        first = int((await run_one(registry, "pid")).output)
        # The process ends in the middle of a call: that call is an error (it may have run).
        crash = await run_one(registry, "crash")
        assert crash.is_error and "ended during the call" in crash.output
        second = int((await run_one(registry, "pid")).output)
        assert second != first and server.connects == 2
        # The process is killed between calls: the next call opens a new session first.
        os.kill(second, signal.SIGKILL)
        await wait_for(lambda: connected(server), lambda up: not up)
        third = await run_one(registry, "pid")
        assert not third.is_error and int(third.output) not in (first, second)
        assert server.connects == 3


async def test_connection_failures(errlog: TextIO) -> None:
    with pytest.raises(MCPConnectionError, match="could not connect"):
        async with MCPServerStdio("/nonexistent/mcp-server", errlog=errlog):
            pass
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]  # never answers
    quiet = MCPServerStdio(silent[0], silent[1:], errlog=errlog, connect_timeout=0.5)
    with pytest.raises(MCPConnectionError, match=r"did not answer within 0\.5 s"):
        await quiet.connect()


async def test_streamable_http_with_headers(http_server: HTTPServer) -> None:
    registry = ToolRegistry()
    server = MCPServerStreamableHTTP(http_server.url, headers={"X-Caller": "agent-7"}, prefix="h_")
    async with server:
        server.register(registry)
        assert (await run_one(registry, "h_whoami")).output == "agent-7"
        assert (await run_one(registry, "h_add", {"a": 2, "b": 2})).output == "4.0"
        refused = await run_one(registry, "h_refuse", {"reason": "policy"})
        assert refused.is_error and refused.output.endswith("refused: policy")


async def test_http_session_forgotten_by_a_restarted_server(http_server: HTTPServer) -> None:
    """With a session (the 2025 protocol's `Mcp-Session-Id`), a restarted server answers
    404: the call did not run, and is sent again on a new session."""
    registry = ToolRegistry()
    legacy = {"mode": "legacy"}
    async with MCPServerStreamableHTTP(http_server.url, client_options=legacy) as server:
        server.register(registry)
        first = await run_one(registry, "pid")
        http_server.stop()
        down = await run_one(registry, "pid")
        assert down.is_error and "MCP server agentrun-test-tools" in down.output
        http_server.start()
        again = await run_one(registry, "pid")
        assert not again.is_error and again.output != first.output
        assert http_server.proc is not None and again.output == str(http_server.proc.pid)
        restarted = server.connects
        http_server.stop()
        http_server.start()
        assert (await run_one(registry, "add", {"a": 1, "b": 1})).output == "2.0"
        assert server.connects == restarted + 1


# Runs through the real service: the model (`scripted`) calls MCP tools, an executor answers.

#: Without a script the model calls every tool with `{}`, then answers with the results.
NO_ARGUMENTS = {"add", "explode", "whoami"}
RESULTS = (
    "Tool results: local: HI; m_add: 42.0; "
    "m_explode: Error executing tool explode; m_whoami: nobody"
)


def with_local(registry: ToolRegistry) -> ToolRegistry:
    @registry.tool
    def local(word: str = "hi") -> str:
        return word.upper()

    return registry


async def test_inline_run_calls_mcp_tools_over_stdio(live_sqlite: Live, errlog: TextIO) -> None:
    registry = with_local(ToolRegistry())
    mcp = stdio(errlog, prefix="m_", include=NO_ARGUMENTS)
    async with mcp as server, live_sqlite.async_client() as client:
        server.register(registry)
        run = await client.run("go", tools=registry, model=scripted(), timeout=30)
    assert run.status == RunStatus.COMPLETED and run.output == RESULTS


def test_sync_inline_run_over_http(live_sqlite: Live, http_server: HTTPServer) -> None:
    """`with` holds the session on a thread of its own; `Client.run` executes the calls on
    a loop of its own, and hands each to that thread."""
    registry = with_local(ToolRegistry())
    server = MCPServerStreamableHTTP(http_server.url, prefix="m_", include=NO_ARGUMENTS)
    with server, live_sqlite.client() as client:
        server.register(registry)
        run = client.run("go", tools=registry, model=scripted(), timeout=30)
    assert run.status == RunStatus.COMPLETED and run.output == RESULTS


def test_webhook_executor_serves_mcp_tools(live_sqlite: Live, errlog: TextIO) -> None:
    registry = ToolRegistry()
    with stdio(errlog, prefix="m_") as server:
        server.register(registry)
        executor = executor_app(registry, secret=SECRET)
        with serve_in_thread(executor) as hooks, live_sqlite.client() as client:
            add = {"name": "m_add", "arguments": {"a": 1, "b": 2}}
            model = scripted({"tool_calls": [add]}, {"text": "3"})
            created = client.runs.create(prompt="x", model=model, tools=registry, webhook=hooks)
            run = client.runs.wait(created.id, TERMINAL, timeout=30)
            events = client.runs.list_events(run.id)
    assert run.status == RunStatus.COMPLETED and run.output == "3"
    assert [e.type for e in events].count("tool_result.received") == 1
