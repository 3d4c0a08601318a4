"""A run as an A2A task, and the parts a client answers one with: the mapping itself, no
IO. Task = run, `context_id` = the run's conversation (its first run's id); the states,
the input-required message (one DataPart a call, ADK's `function_call` shape; an approval
one of its own type) and the completed run's output as an artifact."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import InvalidParamsError
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.timestamp_pb2 import Timestamp

from app.core.lifecycle import RunStatus
from app.service import lineage
from app.service.schemas import integral
from app.service.types import RunRecord

#: A DataPart's `metadata` key that says what it holds (ADK's convention), and its values:
#: a call the client runs and the answer it sends; a call waiting for a person's decision
#: and that decision.
KIND = "adk_type"
FUNCTION_CALL = "function_call"
FUNCTION_RESPONSE = "function_response"
APPROVAL_REQUEST = "approval_request"
APPROVAL_RESPONSE = "approval_response"

STATES: Mapping[RunStatus, TaskState] = {
    RunStatus.QUEUED: TaskState.TASK_STATE_SUBMITTED,
    RunStatus.RUNNING: TaskState.TASK_STATE_WORKING,
    RunStatus.REQUIRES_ACTION: TaskState.TASK_STATE_INPUT_REQUIRED,
    RunStatus.COMPLETED: TaskState.TASK_STATE_COMPLETED,
    RunStatus.FAILED: TaskState.TASK_STATE_FAILED,
    RunStatus.EXPIRED: TaskState.TASK_STATE_FAILED,
    RunStatus.CANCELLED: TaskState.TASK_STATE_CANCELED,
}
#: The statuses a ListTasks `status` filter names (FAILED: `failed`; `expired` runs are
#: FAILED tasks too but are listed only without a filter).
FILTERS: Mapping[TaskState, RunStatus] = {
    TaskState.TASK_STATE_SUBMITTED: RunStatus.QUEUED,
    TaskState.TASK_STATE_WORKING: RunStatus.RUNNING,
    TaskState.TASK_STATE_INPUT_REQUIRED: RunStatus.REQUIRES_ACTION,
    TaskState.TASK_STATE_COMPLETED: RunStatus.COMPLETED,
    TaskState.TASK_STATE_FAILED: RunStatus.FAILED,
    TaskState.TASK_STATE_CANCELED: RunStatus.CANCELLED,
}
#: The states after which a task takes no more messages and a stream ends.
ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
#: ... and where a stream ends though the task goes on when answered.
INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})


@dataclass(frozen=True, slots=True)
class Waiting:
    """What a suspended run waits for from the client: the calls it answers (`{"id",
    "name", "arguments"}`, unanswered, none a queue's) and the approvals it decides
    (`{"id", "name", "arguments", "arguments_hash"}`); `other`: a wait only an operator
    ends (a budget, an invalid call to resolve), as text."""

    calls: Sequence[Mapping[str, Any]] = ()
    approvals: Sequence[Mapping[str, Any]] = ()
    other: str | None = None

    @property
    def empty(self) -> bool:
        return not self.calls and not self.approvals and self.other is None


def waiting_of(required_action: Mapping[str, Any] | None) -> Waiting:
    """The client's part of a run's `required_action` (the API's shape)."""
    if required_action is None:
        return Waiting()
    kind = required_action.get("type")
    calls = [
        c
        for c in required_action.get("tool_calls") or ()
        if not c.get("answered") and c.get("queue") is None
    ]
    if kind in ("submit_tool_results", "approve_tool_calls"):
        return Waiting(calls, list(required_action.get("approvals") or ()))
    if kind == "raise_limits":
        return Waiting(
            other=f"the run waits for its limit {required_action.get('limit')} to be raised"
        )
    tool = required_action.get("tool_name")
    return Waiting(other=f"the run waits for its invalid call of {tool!r} to be resolved")


def state_of(record: RunRecord, waiting: Waiting) -> TaskState:
    """The task's state: a suspended run that waits only for others (a queue's executor,
    its child runs) is WORKING, not INPUT_REQUIRED."""
    if record.status == RunStatus.REQUIRES_ACTION and waiting.empty:
        return TaskState.TASK_STATE_WORKING
    return STATES[record.status]


def data_part(data: Any, kind: str) -> Part:
    part = Part(data=struct_pb2.Value(), metadata=struct_pb2.Struct())
    ParseDict(data, part.data)
    part.metadata.update({KIND: kind})
    return part


def text_part(text: str) -> Part:
    return Part(text=text)


def part_kind(part: Part) -> str | None:
    if not part.HasField("metadata"):
        return None
    value = _json_of(part.metadata).get(KIND)
    return value if isinstance(value, str) else None


def part_data(part: Part) -> Any:
    """A DataPart's JSON (numbers arrive as doubles: whole ones are integers again)."""
    return integral(_json_of(part.data))


def _json_of(value: Any) -> Any:
    """A Struct or Value as JSON; one JSON cannot hold (an infinity, NaN) is the
    client's error."""
    try:
        return MessageToDict(value)
    except (ValueError, OverflowError) as exc:
        raise InvalidParamsError(f"message.parts: not JSON ({exc})") from None


def stamp(record: RunRecord) -> Timestamp:
    out = Timestamp()
    out.FromDatetime(record.updated_at)
    return out


def status_message(record: RunRecord, waiting: Waiting, state: TaskState) -> Message | None:
    """The agent's message of the task's status: what an INPUT_REQUIRED task waits for,
    why a FAILED or CANCELED one ended."""
    parts: list[Part] = []
    if state == TaskState.TASK_STATE_INPUT_REQUIRED:
        parts += [
            data_part({"id": c["id"], "name": c["name"], "args": c["arguments"]}, FUNCTION_CALL)
            for c in waiting.calls
        ]
        parts += [
            data_part(
                {
                    "id": a["id"],
                    "name": a["name"],
                    "args": a["arguments"],
                    "arguments_hash": a["arguments_hash"],
                },
                APPROVAL_REQUEST,
            )
            for a in waiting.approvals
        ]
        if waiting.other is not None:
            parts.append(text_part(waiting.other))
    elif state in (TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED):
        error = record.error or {}
        parts.append(text_part(str(error.get("message") or record.status.value)))
    if not parts:
        return None
    return Message(
        message_id=f"{record.id}:{record.version}",
        context_id=lineage.conversation_of(record),
        task_id=record.id,
        role=Role.ROLE_AGENT,
        parts=parts,
    )


def output_artifact(record: RunRecord) -> Artifact | None:
    """A completed run's output: text, or its JSON as data when the run had an output
    schema (structured output)."""
    if record.status != RunStatus.COMPLETED or record.output is None:
        return None
    part = text_part(record.output)
    if record.config.get("output_schema") is not None:
        try:
            part = Part(data=struct_pb2.Value())
            ParseDict(orjson.loads(record.output), part.data)
        except (orjson.JSONDecodeError, ValueError):
            part = text_part(record.output)
    return Artifact(artifact_id=f"{record.id}:output", name="output", parts=[part])


def task_of(
    record: RunRecord,
    required_action: Mapping[str, Any] | None,
    history: Sequence[Message] = (),
) -> Task:
    """The run as a task (its `history`: the messages the caller asked for)."""
    waiting = waiting_of(required_action)
    state = state_of(record, waiting)
    status = TaskStatus(state=state, timestamp=stamp(record))
    message = status_message(record, waiting, state)
    if message is not None:
        status.message.CopyFrom(message)
    task = Task(
        id=record.id,
        context_id=lineage.conversation_of(record),
        status=status,
        history=list(history),
    )
    if (artifact := output_artifact(record)) is not None:
        task.artifacts.append(artifact)
    agent = lineage.agent_of(record) or {}
    version = agent.get("version")  # (a string: a Struct's numbers are doubles, `1.0`)
    task.metadata.update({"agent": agent.get("name"), "agent_version": str(version)})
    return task


def history_of(
    record: RunRecord, messages: Sequence[tuple[int, Mapping[str, Any]]]
) -> list[Message]:
    """The run's own messages (`(index, message)` of `GET /v1/runs/{id}/messages`) as A2A
    messages: text as TextParts, tool calls and results as DataParts of ADK's types."""
    out: list[Message] = []
    context = lineage.conversation_of(record)
    for index, message in messages:
        role = Role.ROLE_USER if message["role"] == "user" else Role.ROLE_AGENT
        if message["role"] == "system":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        parts = [p for b in blocks if (p := _part_of(b)) is not None]
        if parts:
            out.append(
                Message(
                    message_id=f"{record.id}:m{index}",
                    context_id=context,
                    task_id=record.id,
                    role=role,
                    parts=parts,
                )
            )
    return out


def _part_of(block: Mapping[str, Any]) -> Part | None:
    kind = block.get("type")
    if kind == "text":
        return text_part(str(block.get("text", "")))
    if kind == "toolcall":
        function = block.get("function") or {}
        call = {
            "id": block.get("id"),
            "name": function.get("name"),
            "args": function.get("arguments"),
        }
        return data_part(call, FUNCTION_CALL)
    if kind == "toolresult":
        texts = [
            c.get("text") if c.get("type") == "text" else c.get("value")
            for c in block.get("content") or ()
        ]
        response = texts[0] if len(texts) == 1 else texts
        answer = {"id": block.get("call"), "name": block.get("name"), "response": response}
        return data_part(answer, FUNCTION_RESPONSE)
    return None
