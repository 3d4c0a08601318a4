"""A small MCP server written with the official `mcp` SDK, for examples/mcp_executor.py. It
knows nothing of agentrun: any MCP server would do in its place.

    python examples/mcp_geo_server.py       # speaks MCP over stdin/stdout
"""

from __future__ import annotations

import sys

from mcp.server.mcpserver import MCPServer

CAPITALS = {"france": "Paris", "japan": "Tokyo", "kenya": "Nairobi"}

server = MCPServer("geo", log_level="WARNING")


@server.tool()
def capital(country: str) -> str:
    """The capital city of a country."""
    print(f"  capital({country!r})", file=sys.stderr, flush=True)  # stdout is the protocol
    return CAPITALS.get(country.lower(), "unknown")


if __name__ == "__main__":
    server.run("stdio")
