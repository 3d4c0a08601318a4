"""A registry of Python functions served as tools, whatever executes them (inline in
`Client.run`, the webhook app, and later a queue or MCP executor): each executor hands the
registry the pending calls and submits the `ToolResult`s it gets back.

A function's name, description (docstring) and JSON schema come from its signature, type
hints and docstring through pydantic. Arguments are validated before the call; invalid
arguments, an exception and a timeout each become an error result (`is_error: true`) whose
text tells the model what went wrong, so a bad call costs a turn, not the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import re
import threading
import typing
import weakref
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import pydantic
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field

from agentrun_client._base import surrogate_in
from agentrun_client.models import ToolCall, ToolResult

F = TypeVar("F", bound=Callable[..., Any])
R = TypeVar("R")
T = TypeVar("T", bound="BaseTool")
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """Handed to a tool function that has a parameter annotated with this type (it is not
    part of the tool's schema). `call_id` is stable across redeliveries and retries of the
    same call: use it as an idempotency key for side effects."""

    run_id: str
    call_id: str
    tool_name: str
    attempt: int = 1  # a queue's call executed again after a lease lapsed: 2, 3, ...


class _Limit:
    """At most `n` holders at a time, per event loop (a sync client runs its tools on a
    loop of its own)."""

    def __init__(self, n: int | None) -> None:
        if n is not None and n < 1:
            raise ValueError("a concurrency limit must be at least 1")
        self.n = n
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._by_loop = weakref.WeakKeyDictionary()

    def hold(self) -> contextlib.AbstractAsyncContextManager[Any]:
        if self.n is None:
            return contextlib.nullcontext()
        loop = asyncio.get_running_loop()
        semaphore = self._by_loop.get(loop)
        if semaphore is None:
            semaphore = self._by_loop[loop] = asyncio.Semaphore(self.n)
        return semaphore


async def in_daemon_thread(fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """`fn(*args, **kwargs)` in a daemon thread of its own, in the caller's context.

    Unlike `asyncio.to_thread` (the loop's executor, whose threads the loop's close and the
    interpreter's exit wait for), a call given up on (a tool's timeout) holds nothing: its
    thread runs on in the background until the function returns or the process exits,
    and its outcome is dropped. Python cannot stop a thread."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[R] = loop.create_future()
    context = contextvars.copy_context()

    def settle(value: Any, error: BaseException | None) -> None:
        if future.done():  # (given up on)
            return
        if error is None:
            future.set_result(value)
        else:
            future.set_exception(error)

    def target() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = context.run(fn, *args, **kwargs)
        except Exception as exc:
            error = exc if not isinstance(exc, StopIteration) else RuntimeError(repr(exc))
        except BaseException as exc:  # (SystemExit in a thread ends only the thread)
            error = RuntimeError(repr(exc))
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(settle, value, error)

    name = f"agentrun-tool-{getattr(fn, '__name__', 'call')}"
    threading.Thread(target=target, name=name, daemon=True).start()
    return await future


def _docstring(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The description and the per-parameter texts of a Google-style `Args:` section."""
    doc = inspect.getdoc(fn) or ""
    lines = doc.splitlines()
    params: dict[str, str] = {}
    for i, line in enumerate(lines):
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            current: str | None = None
            for item in lines[i + 1 :]:
                if item and not item.startswith(" "):
                    break  # the next section
                m = re.match(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", item)
                if m:
                    current = m.group(1)
                    params[current] = m.group(2).strip()
                elif current and item.strip():
                    params[current] = f"{params[current]} {item.strip()}"
            return "\n".join(lines[:i]).strip(), params
    return doc.strip(), params


def _is_context(annotation: Any) -> bool:
    if annotation is ToolCallContext:
        return True
    return ToolCallContext in typing.get_args(annotation)  # ToolCallContext | None


class BaseTool:
    """A registry entry: its definition for the API and how a call is answered. `Tool`
    wraps a Python function; `agentrun_client.mcp` makes entries that forward calls to an
    MCP server. `call` returns errors as results (`is_error`), it does not raise."""

    name: str
    description: str
    parameters: dict[str, Any]
    timeout: float | None = None  # seconds a call may take; None: no limit

    def definition(self) -> dict[str, Any]:
        """The tool as `POST /v1/runs` takes it."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    async def call(self, arguments: Any, context: ToolCallContext) -> ToolResult:
        raise NotImplementedError


class Tool(BaseTool):
    """One registered function: its definition for the API and how to call it."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool names are 1-64 of [a-zA-Z0-9_-]: {self.name!r}")
        doc, param_docs = _docstring(fn)
        self.description = description if description is not None else doc
        self.timeout = timeout
        self.limit = _Limit(max_concurrency)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.context_param: str | None = None
        self._positional: list[str] = []
        self._names: dict[str, str] = {}  # field -> parameter name
        hints = typing.get_type_hints(fn, include_extras=True)
        fields: dict[str, Any] = {}
        for p in inspect.signature(fn).parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"tool {self.name!r}: *args and **kwargs have no schema")
            annotation = hints.get(p.name, Any)
            if _is_context(annotation):
                self.context_param = p.name
                continue
            if p.kind == p.POSITIONAL_ONLY:
                self._positional.append(p.name)
            default = ... if p.default is p.empty else p.default
            # Fields are named apart from the parameters (aliases): a parameter may be
            # called `json` or `model_name` without meeting BaseModel's own names.
            field = f"p{len(self._names)}"
            self._names[field] = p.name
            info = Field(default, alias=p.name)
            if p.name in param_docs:
                info = Field(default, alias=p.name, description=param_docs[p.name])
            fields[field] = (annotation, info)
        self.arguments: type[BaseModel] = pydantic.create_model(
            f"{self.name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = self.arguments.model_json_schema()
        schema.pop("title", None)
        self.parameters: dict[str, Any] = schema

    def _validate(self, arguments: Any) -> BaseModel:
        if isinstance(arguments, str):  # a provider that sent the arguments as JSON text
            arguments = json.loads(arguments) if arguments.strip() else {}
        if arguments is None:
            arguments = {}
        return self.arguments.model_validate(arguments)

    async def _invoke(self, args: BaseModel, context: ToolCallContext) -> Any:
        values = {name: getattr(args, field) for field, name in self._names.items()}
        positional = [values.pop(name) for name in self._positional]
        if self.context_param is not None:
            values[self.context_param] = context
        if self.is_async:
            result: Any = await self.fn(*positional, **values)
            return result
        # (A timed-out sync function's thread runs on to its end, holding nothing.)
        return await in_daemon_thread(self.fn, *positional, **values)

    async def call(self, arguments: Any, context: ToolCallContext) -> ToolResult:
        """Validate, call (within the timeout), and turn the outcome into a result."""

        def error(text: str) -> ToolResult:
            return ToolResult(tool_call_id=context.call_id, output=text, is_error=True)

        try:
            args = self._validate(arguments)
        except (pydantic.ValidationError, ValueError) as exc:
            return error(f"Invalid arguments for tool {self.name!r}: {_explain(exc)}")
        async with self.limit.hold():
            try:
                value = await asyncio.wait_for(self._invoke(args, context), self.timeout)
            except TimeoutError:
                return error(f"Tool {self.name!r} timed out after {self.timeout:g} s")
            except Exception as exc:
                return error(f"Tool {self.name!r} failed: {type(exc).__name__}: {exc}")
        try:
            output = pydantic_core.to_jsonable_python(value)
        except pydantic_core.PydanticSerializationError as exc:
            return error(f"Tool {self.name!r} returned a value that is not JSON: {exc}")
        return ToolResult(tool_call_id=context.call_id, output=output)


def _explain(exc: Exception) -> str:
    if not isinstance(exc, pydantic.ValidationError):
        return f"the arguments are not a JSON object ({exc})"
    parts = []
    for e in exc.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"]) or "arguments"
        given = "" if e["type"] in ("missing", "model_type") else f" (got {e['input']!r})"
        parts.append(f"{where}: {e['msg']}{given}")
    return "; ".join(parts)


class ToolRegistry:
    """Python functions served as tools.

    ```python
    registry = ToolRegistry(max_concurrency=8)

    @registry.tool
    def add(a: float, b: float) -> float:
        "Add two numbers."
        return a + b

    @registry.tool(timeout=10, max_concurrency=2)
    async def charge(order: str, cents: int, ctx: ToolCallContext) -> str: ...
    ```

    `max_concurrency` bounds the calls running at once across the registry, a tool's own
    `max_concurrency` that tool's; `timeout` (seconds) is every tool's default. A sync
    function runs in a daemon thread of its own (`in_daemon_thread`): at its timeout the
    call is answered with an error and the thread runs on, holding nothing.
    """

    def __init__(self, *, max_concurrency: int | None = None, timeout: float | None = None):
        self._tools: dict[str, BaseTool] = {}
        self.limit = _Limit(max_concurrency)
        self.timeout = timeout

    @overload
    def tool(self, fn: F, /) -> F: ...

    @overload
    def tool(
        self,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> Any:
        """Register a function (sync or async); it is returned unchanged."""

        def register(f: Callable[..., Any]) -> Callable[..., Any]:
            self.add(
                f,
                name=name,
                description=description,
                timeout=timeout,
                max_concurrency=max_concurrency,
            )
            return f

        return register(fn) if fn is not None else register

    def add(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        max_concurrency: int | None = None,
    ) -> Tool:
        tool = Tool(
            fn,
            name=name,
            description=description,
            timeout=timeout if timeout is not None else self.timeout,
            max_concurrency=max_concurrency,
        )
        self.register(tool)
        return tool

    def register(self, tool: T) -> T:
        """Add a ready-made entry (a `BaseTool`, such as an MCP server's tool)."""
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[BaseTool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> BaseTool | None:
        return self._tools.get(name)

    def definitions(self) -> list[dict[str, Any]]:
        """Every tool as `POST /v1/runs` takes it (`tools=registry` does this)."""
        return [t.definition() for t in self._tools.values()]

    async def execute(
        self, call: ToolCall | Mapping[str, Any], *, run_id: str, attempt: int = 1
    ) -> ToolResult:
        """One call's result; never raises for the tool's sake (errors are results)."""
        c = call if isinstance(call, ToolCall) else ToolCall.model_validate(call)
        tool = self._tools.get(c.name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return ToolResult(
                tool_call_id=c.id,
                output=f"Unknown tool {c.name!r}; the tools are: {known}",
                is_error=True,
            )
        async with self.limit.hold():
            result = await tool.call(c.arguments, ToolCallContext(run_id, c.id, c.name, attempt))
        found = surrogate_in(result.output, "the output")
        if found is None:
            return result
        return ToolResult(
            tool_call_id=c.id,
            output=f"Tool {c.name!r} returned text that cannot be sent: {found}, "
            "which is not Unicode text",
            is_error=True,
        )

    async def execute_all(
        self, calls: Iterable[ToolCall | Mapping[str, Any]], *, run_id: str
    ) -> list[ToolResult]:
        """Every call's result, in the calls' order (run concurrently within the limits)."""
        jobs: list[Awaitable[ToolResult]] = [self.execute(c, run_id=run_id) for c in calls]
        return list(await asyncio.gather(*jobs))
