"""A run's configuration as a typed value: what the worker reads of `run_configs.config`
(its model, tools, tool choice, policies), parsed once from the stored document
(`RunRecord.run_config`). The document itself stays on the record as stored: it is what
the API shows and what a continuation copies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core import ToolChoice


@dataclass(frozen=True, slots=True)
class ModelSpec:
    provider: str
    name: str
    params: Mapping[str, Any]  # the spec's other keys (temperature, max tokens, ...)
    doc: Mapping[str, Any]  # the spec as stored (providers and prices read it whole)


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    description: str
    parameters: Any  # the tool's JSON Schema
    queue: str | None  # the executors' queue that serves it (app.store.queues)


@dataclass(frozen=True, slots=True)
class RunConfig:
    model: ModelSpec
    tools: tuple[ToolDef, ...]
    tool_choice: ToolChoice | None
    preamble: str | None
    stream: bool  # the model's text as `model.delta` events
    invalid_tool_call: Mapping[str, Any]  # the policy (`action`, `feedback`)
    expires_in: float | None  # seconds a suspension waits (None: the deployment's)
    tool_queue: str | None  # the queue of tools that name none

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> RunConfig:
        spec = doc["model"]
        return cls(
            model=ModelSpec(
                spec["provider"],
                spec["name"],
                {k: v for k, v in spec.items() if k not in ("provider", "name")},
                spec,
            ),
            tools=tuple(
                ToolDef(t["name"], t.get("description", ""), t["parameters"], t.get("queue"))
                for t in doc.get("tools") or ()
            ),
            tool_choice=tool_choice_of(doc.get("tool_choice")),
            preamble=doc.get("preamble"),
            stream=bool(doc.get("stream")),
            invalid_tool_call=doc.get("invalid_tool_call") or {},
            expires_in=doc.get("expires_in"),
            tool_queue=doc.get("tool_queue"),
        )

    def queue_of(self, tool_name: str) -> str | None:
        """The queue that serves a tool: its own `queue`, else the run's `tool_queue`,
        else none (answered by whoever answers the run)."""
        for tool in self.tools:
            if tool.name == tool_name and tool.queue:
                return tool.queue
        return self.tool_queue


def tool_choice_of(value: Any) -> ToolChoice | None:
    """The stored `tool_choice` (none, a kind, or `{"name": ...}`) as the core's value."""
    if value is None:
        return None
    if isinstance(value, dict):
        return ToolChoice.specific([value["name"]])
    return ToolChoice(value)
