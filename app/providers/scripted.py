"""A deterministic provider for tests and the demo: no network, answers from a script.

Model spec: `{"provider": "scripted", "name": "demo", "script": [...], "delay_ms": 0,
"fail_times": 0}`. Script entry `n` answers model call `n + 1` (the last entry repeats):
`{"text": "..."}` or `{"tool_calls": [{"name": ..., "arguments": {...}}], "text"?: ...}`,
optionally with `"usage": {"input_tokens": .., "output_tokens": ..}` and
`"finish_reason"`. Without a script it calls every advertised tool once, then answers
with the tool results it got back (or echoes the prompt when there are no tools).
`fail_times: k` makes each of the first k attempts of every call fail with a 503.
`max_tokens` caps each answer's `output_tokens` as a provider would (finish `length`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from typing import Any

from app.core import (
    AssistantContent,
    Json,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)
from app.providers.base import (
    ModelRequest,
    ProviderError,
    ProviderTurn,
    StreamItem,
    TextDelta,
    TurnComplete,
)


def _prompt_text(request: ModelRequest) -> str:
    prompt = request.prompt
    if isinstance(prompt, UserMessage):
        return "".join(c.text for c in prompt.content if isinstance(c, Text))
    return ""


def _tool_results_text(request: ModelRequest) -> list[str]:
    prompt = request.prompt
    if not isinstance(prompt, UserMessage):
        return []
    out = []
    for item in prompt.content:
        if isinstance(item, ToolResult):
            parts = [
                c.text if isinstance(c, Text) else str(c.value)
                for c in item.content
                if isinstance(c, Text | Json)
            ]
            out.append(f"{item.name}: {''.join(parts)}")
    return out


class ScriptedProvider:
    name = "scripted"

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.script: list[Mapping[str, Any]] = list(spec.get("script") or [])
        self.delay = float(spec.get("delay_ms", 0)) / 1000
        self.fail_times = int(spec.get("fail_times", 0))

    def _entry(self, request: ModelRequest) -> Mapping[str, Any]:
        if self.script:
            return self.script[min(request.turn - 1, len(self.script) - 1)]
        results = _tool_results_text(request)
        if results:
            return {"text": "Tool results: " + "; ".join(results)}
        if request.tools:
            return {"tool_calls": [{"name": t.name, "arguments": {}} for t in request.tools]}
        return {"text": f"You said: {_prompt_text(request)}"}

    def _turn(self, request: ModelRequest) -> ProviderTurn:
        entry = self._entry(request)
        choice: list[AssistantContent] = []
        if entry.get("text"):
            choice.append(Text(str(entry["text"])))
        for i, call in enumerate(entry.get("tool_calls") or []):
            call_id = call.get("id") or f"call_{request.turn}_{i}"
            choice.append(ToolCall.from_wire(call_id, call["name"], call.get("arguments", {})))
        usage = entry.get("usage") or {}
        inp, out = int(usage.get("input_tokens", 10)), int(usage.get("output_tokens", 5))
        has_calls = any(isinstance(c, ToolCall) for c in choice)
        finish = entry.get("finish_reason", "tool_calls" if has_calls else "stop")
        cap = request.params.get("max_tokens")
        if isinstance(cap, int) and out > cap:
            out, finish = cap, "length"
        return ProviderTurn(
            choice=tuple(choice),
            usage=Usage(inp, out, inp + out),
            message_id=f"msg_scripted_{request.turn}",
            finish_reason=finish,
        )

    async def _before(self, request: ModelRequest) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        if request.attempt <= self.fail_times:
            raise ProviderError("scripted failure", status=503, retryable=True, provider=self.name)

    async def complete(self, request: ModelRequest) -> ProviderTurn:
        await self._before(request)
        return self._turn(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        await self._before(request)
        turn = self._turn(request)
        for item in turn.choice:
            if isinstance(item, Text):
                for start in range(0, len(item.text), 16):
                    yield TextDelta(item.text[start : start + 16])
        yield TurnComplete(turn)
