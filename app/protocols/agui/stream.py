"""One run's progress as an AG-UI event stream, from a point of its conversation on:
RUN_STARTED; each model turn's text (TEXT_MESSAGE_* deltas while a streamed call writes
it, else the whole text once the turn is recorded) and its tool calls (TOOL_CALL_START,
ARGS, END); the results the client does not hold (its agent's executors', a rejection's)
as TOOL_CALL_RESULT; and the end of what this request waits for: RUN_FINISHED (success,
with the frontend calls to answer as `pendingToolCallIds`; an interrupt per pending
approval; cancelled) or RUN_ERROR.

The run's event log says when to look (the hub's live stream, `app.service.live`); its
conversation says what was said (`RunService.messages`), so text and calls are shown as
the run recorded them. The stream follows the run while it works and while the calls of
its agent's own tools (queues, webhooks, child runs) are answered; it ends where the
client must act, or where the run ends."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import structlog
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)

from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.protocols.agui.interrupts import approval_interrupt, operator_interrupt
from app.service import lineage
from app.service.errors import is_unavailable
from app.service.live import EventHub
from app.service.messages import Entry, encode_cursor
from app.service.runs import RunService, RunView
from app.service.schemas import OUTPUT_TOOL
from app.service.types import APPROVAL_APPROVED, Budget, EventRecord

log = structlog.get_logger("agentrun.ag-ui")

#: Events that change nothing this stream shows (the others are looked at: a turn was
#: recorded, the run suspended, a call was answered or decided, the run ended).
QUIET = frozenset(
    {
        E.RUN_CREATED,
        E.RUN_CLAIMED,
        E.MODEL_DELTA,
        E.MODEL_FAILED,
        E.MODEL_ABORTED,
        E.TOOL_CALL_LEASED,
        E.TOOL_CALL_LEASE_EXPIRED,
        E.RUN_CONTINUED,
        E.RUN_RELEASED,
        E.RUN_LEASE_LOST,
    }
)
#: A page of the conversation read at once.
PAGE = 1000


@dataclass(frozen=True, slots=True)
class Start:
    """Where a request's stream starts: the run, the first message of its conversation
    not yet shown (`floor`), and what the client holds."""

    run_id: str
    floor: int  # conversation index: what is before it was shown (or is history)
    thread_id: str
    agui_run_id: str  # the request's `runId`
    known_results: frozenset[str] = frozenset()  # the calls whose results it holds
    frontend: frozenset[str] = frozenset()  # the run's tools the client executes


@dataclass
class _Shown:
    """What this stream has shown of the run so far."""

    index: int = 0  # the next conversation entry to look at
    turns: int = 0  # the run's own assistant messages looked at (turn k is the k-th)
    live_from: int = 1  # the first turn whose streamed deltas are shown as they come
    open_turn: int | None = None  # the turn whose streamed text is open
    done: set[int] = field(default_factory=set)  # turns shown whole or closed


def message_id(run_id: str, turn: int) -> str:
    """The AG-UI id of a run's assistant message of `turn` (stable across requests)."""
    return f"{run_id}-{turn}"


class RunStream:
    def __init__(self, service: RunService, hub: EventHub, start: Start, scope: Scope) -> None:
        self.service = service
        self.hub = hub
        self.start = start
        self.scope = scope
        self.shown = _Shown()
        self.output_tool = False  # (the run answers by calling `final_output`: not shown)
        self.seen_seq = 0  # the run's last event when it was last looked at

    async def events(self) -> AsyncIterator[BaseEvent]:
        """The stream; an error after it started (the database went away) is RUN_ERROR."""
        yield RunStartedEvent(
            thread_id=self.start.thread_id,
            run_id=self.start.agui_run_id,
            protocol_version=PROTOCOL_VERSION,
            metadata={"agentrun": {"run_id": self.start.run_id}},
        )
        try:
            async for event in self._followed():
                yield event
        except Exception as exc:  # the stream has started: the protocol's error event
            log.exception("ag-ui stream failed", run_id=self.start.run_id)
            code = "service-unavailable" if is_unavailable(exc) else "internal-error"
            yield RunErrorEvent(message=f"the stream failed: {type(exc).__name__}", code=code)

    async def _followed(self) -> AsyncIterator[BaseEvent]:
        shown, ended = await self._look()  # (what the run said before this request)
        for out in shown:
            yield out
        if ended is None:
            async with contextlib.aclosing(self.hub.stream(self.start.run_id, 0)) as log_:
                # From its start: a streamed call in flight replays its text so far.
                async for e in log_:
                    if e.type == E.MODEL_DELTA:
                        for out in self._delta(e):
                            yield out
                    if e.seq <= self.seen_seq or e.type in QUIET:
                        continue
                    shown, ended = await self._look()
                    for out in shown:
                        yield out
                    if ended is not None:
                        break
        if ended is None:  # the log ended with the run: its end
            shown, ended = await self._look()
            for out in shown:
                yield out
        for out in ended or [RunErrorEvent(message="the run's stream ended", code="ended")]:
            yield out

    # --- what the run said --------------------------------------------------------------

    def _delta(self, e: EventRecord) -> Iterable[BaseEvent]:
        turn, text = e.data.get("turn"), e.data.get("text")
        shown = self.shown
        if not isinstance(turn, int) or turn < shown.live_from or turn in shown.done:
            return
        if shown.open_turn != turn:
            yield from self._close_text()
            shown.open_turn = turn
            yield TextMessageStartEvent(
                message_id=message_id(self.start.run_id, turn), role="assistant"
            )
        if isinstance(text, str) and text:
            yield TextMessageContentEvent(
                message_id=message_id(self.start.run_id, turn), delta=text
            )

    def _close_text(self) -> Iterable[BaseEvent]:
        shown = self.shown
        if shown.open_turn is not None:
            yield TextMessageEndEvent(message_id=message_id(self.start.run_id, shown.open_turn))
            shown.done.add(shown.open_turn)
            shown.open_turn = None

    async def _entries(self) -> list[Entry]:
        """The conversation from the first entry not looked at."""
        out: list[Entry] = []
        cursor: str | None = encode_cursor(self.shown.index)
        while cursor is not None:
            page, cursor = await self.service.messages(
                self.start.run_id, limit=PAGE, cursor=cursor, scope=self.scope
            )
            out.extend(page)
        return out

    def _said(self, entries: list[Entry]) -> Iterable[BaseEvent]:
        shown = self.shown
        for entry in entries:
            shown.index = entry.index + 1
            message = entry.message
            if entry.from_history:
                continue
            if message["role"] == "assistant":
                shown.turns += 1
                if entry.index >= self.start.floor:
                    yield from self._turn(shown.turns, message["content"])
                else:
                    shown.done.add(shown.turns)
                    shown.live_from = shown.turns + 1
            elif message["role"] == "user" and entry.index >= self.start.floor:
                yield from self._results(entry.index, message["content"])

    def _turn(self, turn: int, content: Any) -> Iterable[BaseEvent]:
        shown = self.shown
        mid = message_id(self.start.run_id, turn)
        parts: list[dict[str, Any]] = (
            [{"type": "text", "text": content}] if isinstance(content, str) else content
        )
        text = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
        if shown.open_turn == turn:
            yield from self._close_text()
        elif turn not in shown.done:
            yield from self._close_text()  # (another turn's: its call was cut off)
            if text:
                yield TextMessageStartEvent(message_id=mid, role="assistant")
                yield TextMessageContentEvent(message_id=mid, delta=text)
                yield TextMessageEndEvent(message_id=mid)
        shown.done.add(turn)
        for p in parts:
            if p.get("type") != "toolcall":
                continue
            function: dict[str, Any] = p.get("function") or {}
            call_id, name = str(p.get("id")), str(function.get("name"))
            if self.output_tool and name == OUTPUT_TOOL:
                continue
            arguments = function.get("arguments")
            args = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
            yield ToolCallStartEvent(
                tool_call_id=call_id, tool_call_name=name, parent_message_id=mid
            )
            yield ToolCallArgsEvent(tool_call_id=call_id, delta=args)
            yield ToolCallEndEvent(tool_call_id=call_id)

    def _results(self, index: int, content: Any) -> Iterable[BaseEvent]:
        if isinstance(content, str):
            return
        for p in content:
            call = p.get("call")
            if p.get("type") != "toolresult" or call in self.start.known_results:
                continue
            if self.output_tool and p.get("name") == OUTPUT_TOOL:
                continue
            yield ToolCallResultEvent(
                message_id=f"{self.start.run_id}-{index}-{call}",
                tool_call_id=str(call),
                content=result_text(p),
                role="tool",
            )

    # --- where it stands ----------------------------------------------------------------

    async def _look(self) -> tuple[list[BaseEvent], list[BaseEvent] | None]:
        """What the run said since the last look, and the stream's end if it has come.
        The run is read before its conversation, so the conversation holds at least
        what the state it is judged by had said."""
        view = await self.service.get_run(self.start.run_id, scope=self.scope)
        self.seen_seq = view.record.last_event_seq
        self.output_tool = view.record.config.get("output_schema") is not None
        out = list(self._said(await self._entries()))
        ending = self._ending(view)
        if ending is None:
            return out, None
        return out, [*self._close_text(), *ending]

    def _ending(self, view: RunView) -> list[BaseEvent] | None:
        r = view.record
        thread, run = self.start.thread_id, self.start.agui_run_id
        meta = {"agentrun": {"run_id": r.id, "status": r.status.value}}
        if r.status == RunStatus.COMPLETED:
            return [
                RunFinishedEvent(
                    thread_id=thread,
                    run_id=run,
                    result=self._result(r.output),
                    outcome=RunFinishedSuccessOutcome(),
                    metadata=meta,
                )
            ]
        if r.status == RunStatus.CANCELLED:
            return [
                RunFinishedEvent(
                    thread_id=thread,
                    run_id=run,
                    outcome=RunFinishedCancelledOutcome(),
                    metadata=meta,
                )
            ]
        if r.status in (RunStatus.FAILED, RunStatus.EXPIRED):
            error = r.error or {}
            return [
                RunErrorEvent(
                    message=str(error.get("message") or f"the run {r.status.value}"),
                    code=str(error.get("type") or r.status.value),
                    metadata=meta,
                )
            ]
        if r.status != RunStatus.REQUIRES_ACTION:
            return None
        if isinstance(r.waiting, Budget) or view.resolution is not None:
            interrupt = RunFinishedInterruptOutcome(interrupts=[operator_interrupt(r)])
            return [
                RunFinishedEvent(thread_id=thread, run_id=run, outcome=interrupt, metadata=meta)
            ]
        if r.waiting_round is None:  # (queued behind its conversation, say)
            return None
        calls = view.pending
        unanswered = [
            c
            for c in calls
            if not c.preresolved
            and c.result_hash is None
            and c.approval in (None, APPROVAL_APPROVED)
        ]
        if any(c.child_run_id is not None or c.name not in self.start.frontend for c in unanswered):
            return None  # (the agent's own executors answer: follow the run on)
        gated = [c for c in calls if c.awaits_approval]
        if gated:
            interrupts = [approval_interrupt(c, r) for c in gated]
            outcome = RunFinishedInterruptOutcome(interrupts=interrupts)
            return [RunFinishedEvent(thread_id=thread, run_id=run, outcome=outcome, metadata=meta)]
        if unanswered:
            pending = RunFinishedSuccessOutcome(
                pending_tool_call_ids=[c.call_id for c in unanswered]
            )
            return [RunFinishedEvent(thread_id=thread, run_id=run, outcome=pending, metadata=meta)]
        return None  # (every call answered: it resumes)

    def _result(self, output: str | None) -> Any:
        if output is not None and self.output_tool:
            with contextlib.suppress(orjson.JSONDecodeError):
                return orjson.loads(output)
        return output


def result_text(part: Mapping[str, Any]) -> str:
    """A tool result's content as the text AG-UI carries (JSON as its text; an error
    result's text starts with `Error: `, as the model reads it on the Chat wire)."""
    texts = []
    for c in part.get("content") or ():
        if c.get("type") == "text":
            texts.append(str(c.get("text", "")))
        elif c.get("type") == "json":
            texts.append(orjson.dumps(c.get("value")).decode())
        else:
            texts.append(f"[{c.get('type')}]")
    text = "\n".join(texts)
    return f"Error: {text}" if part.get("is_error") else text


def frontend_of(view: RunView) -> frozenset[str]:
    """The names of the run's tools its AG-UI client executes (its `origin` mark's)."""
    origin = lineage.origin_of(view.record) or {}
    names = origin.get("frontend_tools") or ()
    return frozenset(str(n) for n in names)
