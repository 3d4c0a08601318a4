"""The run's errors: rig's `PromptError` variants, with upstream's Display texts."""

from __future__ import annotations

import json
from collections.abc import Sequence

from app.core.content import Message

PROTOCOL_VIOLATION_PREFIX = "agent run driver protocol violation: "


def debug_list(names: Sequence[str]) -> str:
    """Rust's `{:?}` of a `Vec<String>`, e.g. `["add", "sub"]`."""
    return "[" + ", ".join(json.dumps(n, ensure_ascii=False) for n in names) + "]"


class AgentRunError(Exception):
    """Base of every error a run method raises (rig's `PromptError`)."""


class CompletionError(AgentRunError):
    """A `CompletionError(ResponseError(message))`."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(f"CompletionError: ResponseError: {message}")


class MaxTurnsError(AgentRunError):
    def __init__(self, max_turns: int, chat_history: Sequence[Message], prompt: Message) -> None:
        self.max_turns = max_turns
        self.chat_history = tuple(chat_history)
        self.prompt = prompt
        super().__init__(f"MaxTurnsError: reached max turns limit: {max_turns}")


class PromptCancelled(AgentRunError):
    def __init__(self, reason: str, chat_history: Sequence[Message]) -> None:
        self.reason = reason
        self.chat_history = tuple(chat_history)
        super().__init__(f"PromptCancelled: {reason}")


class ProtocolViolation(PromptCancelled):
    """A method called in the wrong state; the run is unchanged and still drivable."""

    def __init__(self, detail: str, chat_history: Sequence[Message]) -> None:
        self.detail = detail
        super().__init__(PROTOCOL_VIOLATION_PREFIX + detail, chat_history)


class UnknownToolCall(AgentRunError):
    def __init__(
        self,
        tool_name: str,
        available_tools: Sequence[str],
        allowed_tools: Sequence[str],
        chat_history: Sequence[Message],
    ) -> None:
        self.tool_name = tool_name
        self.available_tools = tuple(available_tools)
        self.allowed_tools = tuple(allowed_tools)
        self.chat_history = tuple(chat_history)
        super().__init__(
            "UnknownToolCall: model attempted to call unknown or disallowed tool "
            f"`{tool_name}`. Available tools: {debug_list(self.available_tools)}. "
            f"Allowed tools for this turn: {debug_list(self.allowed_tools)}"
        )


class StateDecodeError(ValueError):
    """A serialized run that cannot be loaded (bad JSON, bad shape, or a future version)."""
