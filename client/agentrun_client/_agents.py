"""What the client's agents share and that does no IO: the fields of an agent's runs, the
body of its create and update, and the path of one (its name checked first)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypedDict

from agentrun_client._base import Tools, tool_definitions
from agentrun_client.errors import InvalidInput


class AgentFields(TypedDict, total=False):
    """The fields of a named agent's runs besides its `model` (`client.agents.create` /
    `update`; docs/client.md, *Agents and child runs*). `tools` is a `ToolRegistry` or a list of
    definitions; an agent tool is `{"name": "ask", "agent": "researcher"}` (or
    `"researcher@2"`), whose calls start child runs of that agent."""

    preamble: str
    tools: Tools
    tool_choice: str | Mapping[str, Any]
    max_turns: int
    limits: Mapping[str, float]
    tool_concurrency: int
    invalid_tool_call: Mapping[str, Any]
    webhook: str | Mapping[str, Any]
    expires_in: float
    metadata: Mapping[str, Any]
    stream: bool
    tool_queue: str
    priority: int
    approval: str | Mapping[str, Any]
    approval_timeout: float
    approval_on_timeout: str
    compaction: Mapping[str, Any]  # threshold_tokens, model, keep_recent_turns, instructions


#: The service's rule for an agent's name (tests/client/test_vocabulary.py checks it): it
#: is part of URLs.
AGENT_NAME = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"


def agent_path(name: str, suffix: str = "") -> str:
    if not isinstance(name, str) or not re.fullmatch(AGENT_NAME, name):
        raise InvalidInput(
            f"not an agent name: {name!r} (1-64 of letters, digits, `_` and `-`, "
            "a letter or digit first)"
        )
    return f"/v1/agents/{name}{suffix}"


def agent_body(
    description: str, model: Mapping[str, Any], fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The body of `POST /v1/agents` (with `name`) and `PUT /v1/agents/{name}`: the
    fields given (None leaves one out), `tools` as definitions, a `webhook` URL as
    `{"url": …}`."""
    body: dict[str, Any] = {"description": description, "model": dict(model)}
    for name, value in fields.items():
        if value is None:
            continue
        if name == "tools":
            value = tool_definitions(value)
        elif name == "webhook" and isinstance(value, str):
            value = {"url": value}
        body[name] = value
    return body
