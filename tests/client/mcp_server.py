"""A tiny MCP server written with the official SDK, for the MCP executor's tests: run as a
program of its own, over stdio (`python mcp_server.py stdio`) or streamable HTTP on
127.0.0.1 (`python mcp_server.py http PORT`).

Its tools cover what the executor maps: text, structured (JSON) and image results, an
anticipated failure (`isError`), an unexpected exception, a slow call, a dotted name, the
server's pid (to see a reconnect), and a crash mid-call.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import ImageContent, TextContent
from pydantic import Field

server = MCPServer("agentrun-test-tools", log_level="CRITICAL")  # no slow rich tracebacks


@server.tool()
def add(a: float = 20.0, b: float = 22.0) -> float:
    """Add two numbers."""
    return a + b


@server.tool()
def echo(text: Annotated[str, Field(description="what to say back")]) -> str:
    """Say the text back, unstructured."""
    return text


@server.tool(structured_output=False)
def lines(count: int) -> list[TextContent]:
    """`count` text blocks."""
    return [TextContent(type="text", text=f"line {i}") for i in range(1, count + 1)]


@server.tool()
def forecast(city: str) -> dict[str, object]:
    """A structured result."""
    return {"city": city, "temperature": 21.5, "sky": "clear"}


@server.tool(structured_output=False)
def pixel() -> list[TextContent | ImageContent]:
    """A text block and a one-byte image."""
    data = base64.b64encode(b"\x89").decode()
    return [
        TextContent(type="text", text="a pixel"),
        ImageContent(type="image", data=data, mime_type="image/png"),
    ]


@server.tool()
def refuse(reason: str) -> str:
    """Fail the way a tool means to (a `ToolError`: `isError` with the message)."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def explode() -> str:
    """Fail unexpectedly."""
    raise RuntimeError("boom")


@server.tool()
async def sleep(seconds: float) -> str:
    """Take `seconds` to answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(name="math.mul")
def mul(a: float, b: float) -> float:
    """A name with a dot, which the service's tool names do not allow."""
    return a * b


@server.tool()
def pid() -> int:
    """The server process's id."""
    return os.getpid()


@server.tool()
def crash() -> str:
    """End the server process in the middle of the call."""
    os._exit(3)


@server.tool()
def reject() -> str:
    """Answer with a JSON-RPC error, not a result."""
    raise MCPError(code=-32602, message="no such thing")


@server.tool()
def ids(ctx: Context) -> dict[str, str]:
    """The `agentrun/*` entries of the request's `_meta`."""
    meta = ctx.request_context.meta or {}
    return {k: str(v) for k, v in meta.items() if k.startswith("agentrun/")}


@server.tool()
def whoami(ctx: Context) -> str:
    """The `X-Caller` header of the HTTP request, or the `CALLER` environment variable."""
    headers = ctx.headers or {}
    return headers.get("x-caller") or os.environ.get("CALLER", "nobody")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
