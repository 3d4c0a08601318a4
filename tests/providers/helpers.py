"""Small builders shared by the provider tests."""

from __future__ import annotations

import dataclasses
from typing import Any

from app.core import Message, UserMessage
from app.providers.base import ModelRequest, ProviderTurn, ToolSpec

ADD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
    "required": ["x", "y"],
}
ADD = ToolSpec("add", "Add two integers", ADD_SCHEMA)
WEATHER = ToolSpec(
    "get_weather",
    "Current weather for a city",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def request(
    prompt: Message | str = "What is 2+3?",
    *history: Message,
    **kw: Any,
) -> ModelRequest:
    msg = UserMessage(prompt) if isinstance(prompt, str) else prompt
    kw.setdefault("model", "test-model")
    return ModelRequest(prompt=msg, history=tuple(history), **kw)


def without_raw(turn: ProviderTurn) -> ProviderTurn:
    return dataclasses.replace(turn, raw=None)
