"""The MCP executor: the tools of an MCP server, served to a run through the official `mcp`
SDK. It starts examples/mcp_geo_server.py as a process of its own (any MCP server would do:
`MCPServerStdio("npx", ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"])`, or one
at a URL with `MCPServerStreamableHTTP`), registers its tools beside a Python function, and
runs.

    pip install -e './client[mcp]'           # the extra brings the `mcp` SDK
    make run                                # the service, in another terminal
    python examples/mcp_executor.py         # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed

The model is the deterministic `scripted` provider (it asks for `geo_capital`, then
`shout`, then answers); put `{"provider": "openai", "name": "gpt-4o-mini"}` there for a
real one.
"""

from __future__ import annotations

import sys
from pathlib import Path

from agentrun_client import Client, ToolRegistry
from agentrun_client.mcp import MCPServerStdio

GEO_SERVER = str(Path(__file__).with_name("mcp_geo_server.py"))

registry = ToolRegistry(timeout=10)


@registry.tool
def shout(text: str) -> str:
    """Upper-case a text (a Python function beside the MCP server's tools)."""
    return text.upper()


MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [
        {"tool_calls": [{"name": "geo_capital", "arguments": {"country": "Kenya"}}]},
        {"tool_calls": [{"name": "shout", "arguments": {"text": "Nairobi"}}]},
        {"text": "The capital of Kenya is NAIROBI."},
    ],
}


def main() -> None:
    # `with` holds the MCP session on a thread of its own, for sync code like this; in
    # async code `async with` holds it on the running loop (and `AsyncClient.run` runs).
    with MCPServerStdio(sys.executable, [GEO_SERVER], prefix="geo_") as geo:
        geo.register(registry)
        print("tools:", ", ".join(t.name for t in registry), flush=True)
        with Client() as client:
            run = client.run("What is the capital of Kenya?", tools=registry, model=MODEL)
        print(f"{run.id} {run.status}: {run.output}")


if __name__ == "__main__":
    main()
