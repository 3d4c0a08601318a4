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
    queue: str | None  # the executors' queue that serves it (app.toolqueue.sql)
    approval: Any = None  # its approval policy as given (None: the run's)
    agent: str | None = None  # an agent tool: the agent (`name` or `name@version`) it starts


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
    approval: Any = None  # the approval policy of tools that name none (None: never)
    approval_timeout: float | None = None  # seconds a gated call waits for a decision
    approval_on_timeout: str = "reject"  # the decision it then gets
    gates: bool = False  # whether any call could be gated (app.approvals.policies)
    spawns: bool = False  # whether any tool is an agent tool (a call starts a child run)
    output_schema: Any = None  # structured output: the final tool's parameters (None: none)

    @classmethod
    def parse(cls, doc: Mapping[str, Any]) -> RunConfig:
        spec = doc["model"]
        tools = tuple(
            ToolDef(
                t["name"],
                t.get("description", ""),
                t["parameters"],
                t.get("queue"),
                t.get("approval"),
                t.get("agent"),
            )
            for t in doc.get("tools") or ()
        )
        approval = doc.get("approval")
        gates = any(
            (t.approval if t.approval is not None else approval) not in (None, "never")
            for t in tools
        )
        return cls(
            model=ModelSpec(
                spec["provider"],
                spec["name"],
                {k: v for k, v in spec.items() if k not in ("provider", "name")},
                spec,
            ),
            tools=tools,
            tool_choice=tool_choice_of(doc.get("tool_choice")),
            preamble=doc.get("preamble"),
            stream=bool(doc.get("stream")),
            invalid_tool_call=doc.get("invalid_tool_call") or {},
            expires_in=doc.get("expires_in"),
            tool_queue=doc.get("tool_queue"),
            approval=approval,
            approval_timeout=doc.get("approval_timeout"),
            approval_on_timeout=doc.get("approval_on_timeout") or "reject",
            gates=gates,
            spawns=any(t.agent for t in tools),
            output_schema=doc.get("output_schema"),
        )

    def tool(self, tool_name: str) -> ToolDef | None:
        return next((t for t in self.tools if t.name == tool_name), None)

    def approval_of(self, tool_name: str) -> Any:
        """A tool's approval policy: its own, else the run's, else `never`."""
        tool = self.tool(tool_name)
        own = tool.approval if tool is not None else None
        if own is not None:
            return own
        return "never" if self.approval is None else self.approval

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


def spawns(doc: Mapping[str, Any]) -> bool:
    """Whether a stored configuration has agent tools (its calls start child runs): read
    off the document without parsing the rest of it."""
    return any(isinstance(t, dict) and t.get("agent") for t in doc.get("tools") or ())
