"""The A2A request handler: the SDK's transports (JSON-RPC, HTTP+JSON) call it, and it
calls the service. No task store, no agent executor: a task is a run, driven by the
workers like any other; this reads and writes runs, and waits on the event hub."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import AsyncGenerator, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    ExtendedAgentCardNotConfiguredError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf.json_format import MessageToDict
from pydantic import ValidationError
from starlette.requests import Request

from app.api import models
from app.api.live import ClientGone, while_connected
from app.approvals.service import ApprovalService
from app.core.lifecycle import TERMINAL, RunStatus
from app.protocols.a2a import tasks
from app.protocols.sessions import Sessions, Turn
from app.service import lineage
from app.service.errors import (
    AgentNotFound,
    ConversationBusy,
    RunNotFound,
    RunStateConflict,
    ServiceError,
)
from app.service.live import SETTLED, EventHub
from app.service.principals import Permission, Principal
from app.service.reads import RunReads
from app.service.runs import RunService, RunView
from app.service.schemas import DecisionsIn, ToolResultsIn
from app.service.types import BadCursor, RunFilter, RunRecord

#: How long one wait of a blocking SendMessage lasts before it looks again (it lasts until
#: the task ends or needs input, or the client goes).
WAIT_SECONDS = 30.0
#: The events after which a stream does not read the task again (streamed text).
QUIET = frozenset({"model.delta"})
#: The statuses a run waiting only for others (WORKING) leaves when it goes on.
ONWARD = frozenset(RunStatus) - {RunStatus.REQUIRES_ACTION}
PAGE_SIZE = 50
#: The longest message id kept (it is the run's metadata and origin; an id is not text).
MAX_ID = 255


@dataclass(frozen=True, slots=True)
class Call:
    """One A2A request: who asks (authenticated by the route), of which agent, and the
    services its app holds."""

    principal: Principal
    agent: str
    request: Request

    @classmethod
    def of(cls, context: ServerCallContext) -> Call:
        call = context.state["call"]
        assert isinstance(call, Call)
        return call

    @property
    def service(self) -> RunService:
        service: RunService = self.request.app.state.service
        return service

    @property
    def sessions(self) -> Sessions:
        sessions: Sessions = self.request.app.state.sessions
        return sessions

    @property
    def hub(self) -> EventHub:
        hub: EventHub = self.request.app.state.event_hub
        return hub

    @property
    def approvals(self) -> ApprovalService:
        approvals: ApprovalService = self.request.app.state.approvals
        return approvals

    @property
    def reads(self) -> RunReads:
        reads: RunReads = self.request.app.state.reads
        return reads

    def needs(self, permission: Permission, what: str) -> None:
        if not self.principal.can(permission):
            raise InvalidRequestError(
                f"{what} needs the permission {permission.value}; this key's role is "
                f"{self.principal.role}"
            )


@contextlib.contextmanager
def translated(*, cancelling: bool = False) -> Iterator[None]:
    """The service's refusals as A2A errors (their problem `code` in `data`)."""
    try:
        yield
    except (RunNotFound, AgentNotFound) as exc:
        raise TaskNotFoundError(exc.detail) from None
    except RunStateConflict as exc:
        if cancelling:
            raise TaskNotCancelableError(exc.detail, data={"code": exc.code}) from None
        raise InvalidRequestError(exc.detail, data={"code": exc.code}) from None
    except ServiceError as exc:
        raise InvalidParamsError(exc.detail, data={"code": exc.code}) from None
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(p) for p in error["loc"])
        raise InvalidParamsError(f"{where}: {error['msg']}") from None


class RunTasks(RequestHandler):
    """A2A's methods over runs of the agent the URL names, in the caller's tenant."""

    # --- messages -----------------------------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        call = Call.of(context)
        before = await self._send(call, params)
        if params.configuration.return_immediately:
            record = await self._read(call, before.id)
        else:
            record = await self._settled(call, before.id)
        return await self._task(call, record, _history_length(params.configuration))

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = Call.of(context)
        before = await self._send(call, params)
        async for event in self._follow(call, before.id, before.last_event_seq):
            yield event

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        call = Call.of(context)
        record = await self._own(call, params.id)
        if record.status in TERMINAL:
            state = TaskState.Name(tasks.STATES[record.status])
            raise UnsupportedOperationError(
                f"task {record.id} is {state} and final: nothing to subscribe to (GetTask reads it)"
            )
        async for event in self._follow(call, record.id, record.last_event_seq):
            yield event

    async def _send(self, call: Call, params: SendMessageRequest) -> RunRecord:
        """The run the message starts, or the task it answers (as it was before)."""
        message = params.message
        if message.role == Role.ROLE_AGENT:
            raise InvalidParamsError("message.role: a client's message is the user's")
        if message.task_id:
            record = await self._own(call, message.task_id)
            if message.context_id and message.context_id != lineage.conversation_of(record):
                raise InvalidParamsError(
                    f"message.context_id: task {record.id} is of context "
                    f"{lineage.conversation_of(record)}"
                )
            await self._answer(call, record, message)
            return record
        call.needs(Permission.RUNS_CREATE, "a message that starts a task")
        if len(message.message_id) > MAX_ID:
            raise InvalidParamsError(f"message.message_id: at most {MAX_ID} characters")
        prompt = _prompt_of(message)
        turn = Turn(
            agent=call.agent,
            prompt=prompt,
            tenant=call.principal.tenant,
            actor=call.principal.actor,
            origin={"protocol": "a2a", "message_id": message.message_id},
            conversation=message.context_id or None,
            metadata={"a2a_message_id": message.message_id} if message.message_id else {},
            idempotency_key=_idempotency_key(call.agent, message.message_id),
        )
        with translated():
            try:
                view = await call.sessions.start(turn)
            except RunNotFound as exc:  # (the context: a conversation it does not know)
                raise InvalidParamsError(f"message.context_id: {exc.detail}") from None
            except ConversationBusy as exc:
                active = exc.extra.get("active_run_id")
                raise InvalidRequestError(
                    f"task {active} of this context is {exc.current}: answer it (a message "
                    "with its task_id) or cancel it before a new message in the context",
                    data={"code": exc.code, "task_id": active},
                ) from None
            except RunStateConflict as exc:
                raise InvalidRequestError(
                    f"{exc.detail}: a context goes on from a completed task only; start a "
                    "new context (a message without context_id)",
                    data={"code": exc.code},
                ) from None
        return view.record

    async def _answer(self, call: Call, record: RunRecord, message: Message) -> None:
        """A message to a task: its DataParts answer the calls (`function_response`) and
        approvals (`approval_response`) the task's input-required message asked for."""
        if record.status in TERMINAL:
            raise UnsupportedOperationError(
                f"task {record.id} has ended: send a message in its context (without the "
                "task id) to continue the conversation"
            )
        results: list[dict[str, Any]] = []
        decisions: list[dict[str, Any]] = []
        for i, part in enumerate(message.parts):
            kind = tasks.part_kind(part)
            if kind not in (tasks.FUNCTION_RESPONSE, tasks.APPROVAL_RESPONSE):
                continue
            data = tasks.part_data(part) if part.HasField("data") else None
            if not isinstance(data, dict) or not isinstance(data.get("id"), str):
                raise InvalidParamsError(f"message.parts[{i}]: a {kind} is an object with an `id`")
            if kind == tasks.FUNCTION_RESPONSE:
                results.append(_result_of(i, data))
            else:
                decisions.append(_decision_of(i, data))
        if not results and not decisions:
            raise InvalidParamsError(
                f'task {record.id} takes answers only: DataParts `{{"id", "name", '
                f'"response"}}` with metadata `{{"{tasks.KIND}": "{tasks.FUNCTION_RESPONSE}"}}` '
                f"(or `{tasks.APPROVAL_RESPONSE}`) for what its input-required message asked"
            )
        # Everything is checked before the first write: a refused message decides nothing.
        if decisions:
            call.needs(Permission.RUNS_APPROVE, "deciding an approval")
        if results:
            call.needs(Permission.TOOL_RESULTS_SUBMIT, "answering a call")
        scope, actor = call.principal.scope, call.principal.actor
        with translated():
            body = DecisionsIn.model_validate({"decisions": decisions}) if decisions else None
            answers = ToolResultsIn.model_validate({"results": results}) if results else None
            await self._answerable(call, record, results, decisions)
            if body is not None:
                await call.approvals.decide(record.id, body, actor=actor, scope=scope)
            if answers is not None:
                await call.service.submit_tool_results(
                    answers, run_id=record.id, actor=actor, scope=scope
                )

    async def _answerable(
        self,
        call: Call,
        record: RunRecord,
        results: list[dict[str, Any]],
        decisions: list[dict[str, Any]],
    ) -> None:
        """Each result answers a call the task hands out (or one this message approves),
        each decision an approval it asks for: checked against the task as it is, so a
        message that would be refused half-way is refused whole."""
        action = await self._required_action(call, record)
        waiting = tasks.waiting_of(action)
        gated = {a["id"] for a in waiting.approvals}
        approved = {d["tool_call_id"] for d in decisions if d["action"] == "approve"}
        calls = {c["id"] for c in (action or {}).get("tool_calls") or ()}
        for d in decisions:
            if d["tool_call_id"] not in gated:
                raise InvalidParamsError(
                    f"approval {d['tool_call_id']!r} is not awaiting a decision",
                    data={"code": "tool-call-not-pending"},
                )
        for r in results:
            if r["tool_call_id"] not in calls | (approved & gated):
                raise InvalidParamsError(
                    f"tool call {r['tool_call_id']!r} is not pending",
                    data={"code": "tool-call-not-pending"},
                )

    async def _settled(self, call: Call, run_id: str) -> RunRecord:
        """The run once it needs the client's input or has ended (a blocking
        SendMessage): a run suspended only for others (WORKING: a queue's executor, its
        child runs) is waited past. As it is when the server shuts down meanwhile (the
        client reads it again later)."""
        wanted: frozenset[RunStatus] = SETTLED
        while True:
            work = call.hub.until(run_id, wanted, WAIT_SECONDS, call.principal.scope)
            try:
                record = await while_connected(call.request, work)
            except ClientGone:  # (nobody reads the answer: a warning, not a stack trace)
                raise InvalidRequestError("the client went away before the task settled") from None
            if record is None:
                raise TaskNotFoundError(f"no task {run_id}")
            if call.hub.released or record.status in TERMINAL:
                return record
            if record.status != RunStatus.REQUIRES_ACTION:
                wanted = SETTLED
                continue
            task = await self._task(call, record, 0)
            if task.status.state != TaskState.TASK_STATE_WORKING:
                return record
            wanted = ONWARD  # (until it goes on: the others answered)

    async def _follow(self, call: Call, run_id: str, after: int) -> AsyncGenerator[Event]:
        """The task now, then an update whenever its state (or what it waits for)
        changes, until it ends or needs input; a completed task's artifact before its
        final status."""
        record = await self._read(call, run_id)
        task = await self._task(call, record, 0)
        yield task
        shown = _status_key(task)
        if _over(task):
            return
        async with contextlib.aclosing(call.hub.stream(run_id, after)) as events:
            async for e in events:
                if e.type in QUIET:
                    continue
                task = await self._task(call, await self._read(call, run_id), 0)
                if _status_key(task) == shown:
                    continue
                shown = _status_key(task)
                for artifact in task.artifacts:
                    yield TaskArtifactUpdateEvent(
                        task_id=task.id,
                        context_id=task.context_id,
                        artifact=artifact,
                        last_chunk=True,
                    )
                yield TaskStatusUpdateEvent(
                    task_id=task.id, context_id=task.context_id, status=task.status
                )
                if _over(task):
                    return

    # --- tasks --------------------------------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        call = Call.of(context)
        record = await self._own(call, params.id)
        limit = params.history_length if params.HasField("history_length") else None
        return await self._task(call, record, limit)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        call = Call.of(context)
        size = params.page_size if params.HasField("page_size") else PAGE_SIZE
        if not 1 <= size <= 100:
            raise InvalidParamsError("page_size: 1 to 100")
        status = None
        if params.status:
            if params.status not in tasks.FILTERS:
                raise InvalidParamsError("status: no run is ever in this state")
            status = tasks.FILTERS[params.status]
        found = RunFilter(status=status, agent=call.agent, scope=call.principal.scope)
        try:
            records, more = await call.reads.runs_page(
                found, limit=size, cursor=params.page_token or None
            )
        except BadCursor as exc:
            raise InvalidParamsError(f"page_token: {exc}") from None
        after = (
            params.status_timestamp_after.ToDatetime(tzinfo=None)
            if params.HasField("status_timestamp_after")
            else None
        )
        listed = [
            await self._task(call, r, 0)
            for r in records
            if (not params.context_id or lineage.conversation_of(r) == params.context_id)
            and (after is None or r.updated_at.replace(tzinfo=None) >= after)
        ]
        return ListTasksResponse(
            tasks=listed, next_page_token=more or "", page_size=size, total_size=len(listed)
        )

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        call = Call.of(context)
        call.needs(Permission.RUNS_CANCEL, "cancelling a task")
        record = await self._own(call, params.id)
        with translated(cancelling=True):
            view = await call.service.cancel(
                record.id, actor=call.principal.actor, scope=call.principal.scope
            )
        return await self._task(call, view.record, 0)

    # --- what this service does not offer -------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(_NO_PUSH)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(_NO_PUSH)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError(_NO_PUSH)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError(_NO_PUSH)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        raise ExtendedAgentCardNotConfiguredError("the agent card is the whole card")

    # --- helpers ------------------------------------------------------------------------

    async def _read(self, call: Call, run_id: str) -> RunRecord:
        with translated():
            view = await call.service.get_run(run_id, scope=call.principal.scope)
        return view.record

    async def _own(self, call: Call, task_id: str) -> RunRecord:
        """The task (run) of this agent in the caller's tenant; else not found."""
        try:
            record = await self._read(call, task_id)
        except TaskNotFoundError:
            record = None
        named = None if record is None else lineage.agent_of(record)
        if record is None or named is None or named.get("name") != call.agent:
            raise TaskNotFoundError(f"no task {task_id} of the agent {call.agent}")
        return record

    async def _required_action(self, call: Call, record: RunRecord) -> dict[str, Any] | None:
        """The run's `required_action` as the API shows it (None once it has ended)."""
        if record.status in TERMINAL:
            return None
        view: RunView = await call.service.view(record)
        action: dict[str, Any] | None = models.RunOut.of(view).model_dump(mode="json")[
            "required_action"
        ]
        return action

    async def _task(self, call: Call, record: RunRecord, history: int | None) -> Task:
        """The run as a task, with the last `history` messages of its own (None: all)."""
        action = await self._required_action(call, record)
        messages: list[Message] = []
        if history is None or history > 0:
            entries: list[Any] = []
            cursor: str | None = None
            with translated():
                while True:  # (every page: the history's tail is asked for)
                    page, cursor = await call.service.messages(
                        record.id, limit=1000, cursor=cursor, scope=call.principal.scope
                    )
                    entries += page
                    if cursor is None:
                        break
            own = [(e.index, e.message) for e in entries if not e.from_history]
            messages = tasks.history_of(record, own)
            if history is not None:
                messages = messages[-history:]
        return tasks.task_of(record, action, messages)


_NO_PUSH = (
    "push notifications are not offered: stream the task (SendStreamingMessage, "
    "SubscribeToTask) or use the service's webhooks"
)


def _history_length(configuration: Any) -> int | None:
    return configuration.history_length if configuration.HasField("history_length") else 0


def _over(task: Task) -> bool:
    state = task.status.state
    return state in tasks.ENDED or state in tasks.INTERRUPTED


def _status_key(task: Task) -> tuple[int, str]:
    """What a stream tells a client about: the state and what it waits for."""
    message = MessageToDict(task.status.message) if task.status.HasField("message") else {}
    return task.status.state, str(message.get("parts"))


def _prompt_of(message: Message) -> str:
    """The text a message asks (its text parts; other data as JSON text)."""
    texts: list[str] = []
    for part in message.parts:
        if part.HasField("text") and part.text:
            texts.append(part.text)
        elif part.HasField("data"):
            texts.append(orjson.dumps(tasks.part_data(part)).decode())
    prompt = "\n".join(texts)
    if not prompt.strip():
        raise InvalidParamsError("message.parts: a message that starts a task needs text (or data)")
    return prompt


def _idempotency_key(agent: str, message_id: str) -> str | None:
    """The create's Idempotency-Key: a message sent again (same `message_id`, to the same
    agent) starts no second run."""
    if not message_id:
        return None
    return f"a2a:{agent}:" + hashlib.sha256(message_id.encode()).hexdigest()[:40]


def _result_of(i: int, data: dict[str, Any]) -> dict[str, Any]:
    if "response" not in data:
        raise InvalidParamsError(
            f"message.parts[{i}]: a {tasks.FUNCTION_RESPONSE} has a `response`"
        )
    return {
        "tool_call_id": data["id"],
        "output": data["response"],
        "is_error": data.get("is_error") is True,
    }


def _decision_of(i: int, data: dict[str, Any]) -> dict[str, Any]:
    decision = data.get("decision")
    if decision not in ("approve", "reject") or not isinstance(data.get("arguments_hash"), str):
        raise InvalidParamsError(
            f'message.parts[{i}]: an {tasks.APPROVAL_RESPONSE} is `{{"id", "arguments_hash", '
            '"decision": "approve" | "reject", "message"?, "args"?}`'
        )
    out: dict[str, Any] = {
        "tool_call_id": data["id"],
        "arguments_hash": data["arguments_hash"],
        "action": decision,
    }
    if data.get("message") is not None:
        out["message"] = data["message"]
    if data.get("args") is not None:
        out["arguments"] = data["args"]
    return out


__all__ = ["A2AError", "Call", "RunTasks"]
