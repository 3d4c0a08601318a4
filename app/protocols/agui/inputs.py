"""What an AG-UI request asks of a thread, read from its `RunAgentInput`: a new user
message (the last message: a turn of the conversation), the tool messages that end it
(answers to the run's frontend calls), or `resume` entries (answers to its interrupts);
and the messages before a thread's first turn, as the history its first run starts
from. The protocol's own models parse the body; the service's JSON rule applies to it
first, as to every request body."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
from ag_ui.core import (
    AssistantMessage,
    DeveloperMessage,
    ResumeEntry,
    RunAgentInput,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import ImagePart as AgImagePart
from ag_ui.core import Message as AgMessage
from pydantic import model_validator

from app.service import jsonschemas
from app.service.errors import InvalidRequest
from app.service.jsonrules import check_body

#: The longest `threadId` and `runId` taken (each is kept in its runs' `origin` mark).
MAX_ID = 1024
#: The most `resume` entries a request may carry (the decisions one request may make).
MAX_RESUME = 1000


class AgUiInput(RunAgentInput):
    """`RunAgentInput`, refused (422) where the service's text and JSON rule refuses a
    body (`app.service.jsonrules`: NUL, lone surrogates, numbers no run can hold)."""

    @model_validator(mode="before")
    @classmethod
    def json_rule(cls, data: Any) -> Any:
        return check_body(data)


@dataclass(frozen=True, slots=True)
class Answer:
    """A tool message answering one call: the result the service takes for it."""

    call_id: str
    output: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class Ask:
    """What one request asks."""

    prompt: str | None  # a new user message: a turn
    history: list[dict[str, Any]]  # the messages before it (a new thread's)
    answers: list[Answer]  # the tool messages that end the messages
    resume: list[ResumeEntry]
    tools: list[dict[str, Any]]  # the frontend tools, as a run's client tools
    known_results: frozenset[str] = field(default_factory=frozenset)  # results it brings


def ask_of(body: RunAgentInput) -> Ask:
    """The request's ask; 422 when it asks nothing (no user message last, no tool
    messages last, no `resume`), or holds what a run cannot take."""
    for name, value in (("threadId", body.thread_id), ("runId", body.run_id)):
        if len(value) > MAX_ID:
            raise InvalidRequest(f"{name}: at most {MAX_ID} characters")
    if len(body.resume or ()) > MAX_RESUME:
        raise InvalidRequest(f"resume: at most {MAX_RESUME} entries")
    messages = [m for m in body.messages if _conversational(m)]
    prompt: str | None = None
    history: list[dict[str, Any]] = []
    answers: list[Answer] = []
    if messages and isinstance(messages[-1], UserMessage):
        prompt = text_of(messages[-1].content, f"messages[{len(messages) - 1}].content")
        history = history_of(messages[:-1])
    else:
        end = len(messages)
        while end and isinstance(messages[end - 1], ToolMessage):
            end -= 1
        answers = [
            answer_of(m, i)
            for i, m in enumerate(messages)
            if i >= end and isinstance(m, ToolMessage)
        ]
    resume = list(body.resume or ())
    if prompt is None and not answers and not resume:
        raise InvalidRequest(
            "messages: nothing to do: the messages end with neither a user message nor "
            "tool messages, and there is no resume entry"
        )
    # The results the client holds of the run it answers: the ones it brings now (its
    # earlier tool messages answered earlier runs, whose call ids a later run may reuse).
    known = frozenset(a.call_id for a in answers)
    return Ask(prompt, history, answers, resume, tools_of(body), known)


def tools_of(body: RunAgentInput) -> list[dict[str, Any]]:
    """The request's tools as a run's tools (a schema-less tool takes any object); 422
    for `parameters` that are no JSON Schema this service evaluates (as a gated tool's,
    `app.service.jsonschemas`): a model could not be offered the tool."""
    tools = []
    for i, t in enumerate(body.tools or ()):
        parameters = t.parameters if t.parameters is not None else {"type": "object"}
        try:
            jsonschemas.check(parameters)
        except jsonschemas.BadSchema as exc:
            raise InvalidRequest(f"tools[{i}].parameters is refused: {exc}") from None
        tools.append({"name": t.name, "description": t.description, "parameters": parameters})
    return tools


def _conversational(message: AgMessage) -> bool:
    """Activity and reasoning messages are the client's display: no turn of a run."""
    return isinstance(
        message, UserMessage | AssistantMessage | ToolMessage | SystemMessage | DeveloperMessage
    )


def text_of(content: str | Sequence[Any], where: str) -> str:
    """A message's text: the string, or its text parts joined by newlines (a part of
    another kind is refused: a prompt and a tool result are text here)."""
    if isinstance(content, str):
        return content
    texts = []
    for i, part in enumerate(content):
        if not isinstance(part, TextPart):
            raise InvalidRequest(f"{where}[{i}]: only text parts are taken here")
        texts.append(part.text)
    return "\n".join(texts)


def answer_of(message: ToolMessage, index: int) -> Answer:
    """A tool message as a result: its text (or, when empty, its `error`); `error` marks
    it failed."""
    text = text_of(message.content, f"messages[{index}].content")
    failed = message.error is not None
    return Answer(message.tool_call_id, text or (message.error or ""), failed)


def history_of(messages: Sequence[AgMessage]) -> list[dict[str, Any]]:
    """The messages before a thread's first turn in the `history` shape of a run: system
    and developer messages as system messages, assistant tool calls as `toolcall` parts,
    each run of tool messages as one user message of `toolresult` parts."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> tool name (a result names its tool)
    for i, m in enumerate(messages):
        where = f"messages[{i}]"
        if isinstance(m, SystemMessage | DeveloperMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": user_content(m.content, where)})
        elif isinstance(m, AssistantMessage):
            parts: list[dict[str, Any]] = []
            if m.content:
                parts.append({"type": "text", "text": m.content})
            for call in m.tool_calls or ():
                names[call.id] = call.function.name
                parts.append(
                    {
                        "type": "toolcall",
                        "id": call.id,
                        "function": {
                            "name": call.function.name,
                            "arguments": arguments_of(call.function.arguments, where),
                        },
                    }
                )
            if parts:
                out.append({"role": "assistant", "content": parts})
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in names:
                raise InvalidRequest(
                    f"{where}.toolCallId: no earlier assistant message made the call "
                    f"{m.tool_call_id!r}"
                )
            answer = answer_of(m, i)
            part: dict[str, Any] = {
                "type": "toolresult",
                "call": m.tool_call_id,
                "name": names[m.tool_call_id],
                "content": [{"type": "text", "text": answer.output}],
            }
            if answer.is_error:
                part["is_error"] = True
            last = out[-1] if out else None
            if last is not None and last["role"] == "user" and _all_results(last["content"]):
                last["content"].append(part)
            else:
                out.append({"role": "user", "content": [part]})
    return out


def _all_results(content: Any) -> bool:
    return isinstance(content, list) and all(p.get("type") == "toolresult" for p in content)


def user_content(content: str | Sequence[Any], where: str) -> str | list[dict[str, Any]]:
    """A user message's content: text, or text and image parts (an image as base64 data
    with its media type, or a URL)."""
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        if isinstance(part, TextPart):
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, AgImagePart) and part.source.type in ("data", "url"):
            image: dict[str, Any] = {"type": "image", "data": part.source.value}
            if part.source.type == "data":
                image["media_type"] = part.source.mime_type
            parts.append(image)
        else:
            raise InvalidRequest(f"{where}.content[{j}]: only text and image parts are taken")
    return parts


def arguments_of(text: str, where: str) -> Any:
    """A tool call's arguments (JSON text) as the object a run's history holds."""
    try:
        value = orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        raise InvalidRequest(f"{where}: a tool call's arguments are not JSON") from None
    if not isinstance(value, dict):
        raise InvalidRequest(f"{where}: a tool call's arguments are not a JSON object")
    return value
