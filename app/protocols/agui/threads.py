"""AG-UI threads as conversations of an agent's runs, and what a request does to one.

A thread is named by its client (`threadId`); its conversation by its first run's id.
No table joins the two: the thread's first run is created with the idempotency key
`ag-ui:<agent>:<sha256(threadId)>` and found again by it (keys are per tenant), each later
turn with `…:<sha256(runId)>`, so a retried request finds the run it made instead of
making another. A request then starts a turn (a new user message: the thread's first
run, or the next run of its conversation), or answers the run it waits on (tool messages
for its frontend calls, `resume` entries for its interrupts). Every part of a request is
checked before its first write (`app.protocols.agui.answers`; a turn's run is planned
before the decisions on the run it replaces), so a refused request is an HTTP problem
and changes nothing; a cancel is written last."""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ag_ui.core import RunAgentInput

from app.approvals.service import ApprovalService
from app.protocols.agui.answers import Writes, need, writes_of
from app.protocols.agui.inputs import Ask
from app.protocols.agui.stream import Start, frontend_of
from app.protocols.sessions import Planned, Sessions, Turn
from app.service import convert, lineage
from app.service.errors import (
    IdempotencyKeyReused,
    InvalidRequest,
    RunNotFound,
    RunStateConflict,
    ToolCallNotPending,
)
from app.service.messages import Entry
from app.service.principals import Permission, Principal
from app.service.runs import RunService, RunView
from app.service.schemas import ToolResultsIn
from app.service.types import RunRecord

#: The protocol's name in a run's `origin` mark.
PROTOCOL = "ag-ui"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def thread_key(agent: str, thread_id: str) -> str:
    """The idempotency key of a thread's first run (per tenant, per agent)."""
    return f"{PROTOCOL}:{agent}:{_digest(thread_id)}"


def turn_key(agent: str, thread_id: str, run_id: str) -> str:
    """The idempotency key of the run a later turn of the thread (`runId`) started."""
    return f"{thread_key(agent, thread_id)}:{_digest(run_id)}"


def made_by(record: RunRecord, body: RunAgentInput) -> bool:
    """Whether `record` is the run a request with this `runId` made."""
    return (lineage.origin_of(record) or {}).get("run_id") == body.run_id


@dataclass(frozen=True, slots=True)
class Threads:
    sessions: Sessions
    approvals: ApprovalService

    @property
    def runs(self) -> RunService:
        return self.sessions.runs

    async def begin(self, agent: str, body: RunAgentInput, ask: Ask, principal: Principal) -> Start:
        """Do what the request asks; where its stream starts."""
        first = await self._first(agent, body, principal)
        if ask.prompt is not None:
            return await self._turn(agent, body, ask, principal, first)
        if first is None:
            raise RunNotFound(f"the agent {agent} has no AG-UI thread {body.thread_id!r}")
        head = await self.sessions.head(agent, first.id, principal.scope)
        if principal.run_id is not None and principal.run_id != head.id:
            raise RunNotFound(f"no run with id {principal.run_id}")
        return await self._answer(head, body, ask, principal)

    async def _first(
        self, agent: str, body: RunAgentInput, principal: Principal
    ) -> RunRecord | None:
        """The thread's first run, if it has one."""
        key = thread_key(agent, body.thread_id)
        first = await self.runs.by_idempotency_key(key, scope=principal.scope)
        if first is not None and (lineage.agent_of(first) or {}).get("name") != agent:
            return None  # (a key this protocol did not make)
        return first

    # --- a new user message -------------------------------------------------------------

    async def _turn(
        self,
        agent: str,
        body: RunAgentInput,
        ask: Ask,
        principal: Principal,
        first: RunRecord | None,
    ) -> Start:
        need(principal, Permission.RUNS_CREATE)
        if first is None:
            if ask.resume:
                raise InvalidRequest(
                    f"resume: the thread {body.thread_id!r} is new: it has no interrupt to answer"
                )
            view = await self._opened(agent, body, ask, principal)
            if view is not None:
                return self._start(view, body, ask, 0)
            first = await self._first(agent, body, principal)  # (another request's: go on)
            if first is None:
                raise RunNotFound(f"the agent {agent} has no AG-UI thread {body.thread_id!r}")
        scope = principal.scope
        if made_by(first, body):  # (a retried first request: its run)
            return self._start(await self.runs.get_run(first.id, scope=scope), body, ask, 0)
        key = turn_key(agent, body.thread_id, body.run_id)
        made = await self.runs.by_idempotency_key(key, scope=scope)
        if made is not None:  # (a retried request: the run it made)
            return self._start(await self.runs.get_run(made.id, scope=scope), body, ask, 0)
        await self.sessions.agent(agent, principal.tenant)  # (deleted: no new turn, 404)
        turn = self._turn_of(agent, body, ask, principal, key, conversation=first.id)
        planned = await self.sessions.plan(turn)
        if ask.resume:  # (the interrupts of the run the new message replaces)
            assert planned.head is not None
            head = await self.runs.view(planned.head)
            writes = writes_of(head, ask, principal, frontend_of(head))
            if writes.decisions is not None:
                await self.approvals.decide(
                    head.record.id, writes.decisions, actor=principal.actor, scope=scope
                )
            # (A cancel: the new run's `if_busy: interrupt` cancels the run it replaces.)
        return self._start(await self.sessions.create(planned), body, ask, 0)

    async def _opened(
        self, agent: str, body: RunAgentInput, ask: Ask, principal: Principal
    ) -> RunView | None:
        """The thread's first run, made by this request; None when another request made
        it first (at once: this one is then a later turn of the thread)."""
        key = thread_key(agent, body.thread_id)
        turn = self._turn_of(agent, body, ask, principal, key)
        planned: Planned = await self.sessions.plan(turn)
        try:
            view = await self.sessions.create(planned)
        except IdempotencyKeyReused:  # (another message: another request's, or this runId's)
            first = await self._first(agent, body, principal)
            if first is None or made_by(first, body):
                raise
            return None
        return view if made_by(view.record, body) else None

    def _turn_of(
        self,
        agent: str,
        body: RunAgentInput,
        ask: Ask,
        principal: Principal,
        key: str,
        conversation: str | None = None,
    ) -> Turn:
        """The request's turn: the thread's first (from the messages before it as
        history), or the next of its `conversation` (winning over a run still active)."""
        origin = {
            "protocol": PROTOCOL,
            "thread_id": body.thread_id,
            "run_id": body.run_id,
            "frontend_tools": [t["name"] for t in ask.tools],
        }
        return Turn(
            agent,
            ask.prompt or "",
            principal.tenant,
            principal.actor,
            origin,
            conversation=conversation,
            tools=ask.tools,
            history=ask.history if conversation is None else (),
            if_busy="reject" if conversation is None else "interrupt",
            idempotency_key=key,
            stream=True,
        )

    # --- answers to the run the thread waits on -----------------------------------------

    async def _answer(
        self, head: RunRecord, body: RunAgentInput, ask: Ask, principal: Principal
    ) -> Start:
        scope = principal.scope
        view = await self.runs.get_run(head.id, scope=scope)
        entries = await conversation(self.runs, head.id, principal)
        made = set(calls_made(entries))
        unknown = [a.call_id for a in ask.answers if a.call_id not in made]
        if unknown:
            raise ToolCallNotPending(
                f"messages: a tool message answers {unknown[0]!r}, a call the thread's run "
                f"{head.id} did not make"
            )
        writes = writes_of(view, ask, principal, frontend_of(view))
        await self._write(view, writes, principal)
        answered = {a.call_id for a in ask.answers} | writes.decided
        return self._start(view, body, ask, floor_after(entries, answered))

    async def _write(self, view: RunView, writes: Writes, principal: Principal) -> None:
        """The checked writes: decisions, results, then the cancel."""
        run_id, scope, actor = view.record.id, principal.scope, principal.actor
        if writes.decisions is not None:
            await self.approvals.decide(run_id, writes.decisions, actor=actor, scope=scope)
        if writes.results is not None:
            try:
                await self.runs.submit_tool_results(
                    writes.results, run_id=run_id, actor=actor, scope=scope
                )
            except (RunStateConflict, ToolCallNotPending):  # (by these very answers?)
                if not await self._recorded(view, writes.results):
                    raise
        if writes.cancel:
            with contextlib.suppress(RunStateConflict):  # (it ended meanwhile: the stream says)
                await self.runs.cancel(run_id, actor=actor, scope=scope)

    async def _recorded(self, before: RunView, results: ToolResultsIn) -> bool:
        """Whether the round `before` waited on holds exactly these results (another
        request's, the same answers at once): accepted already, as a retry's are."""
        now = await self.runs.view(before.record)  # (the round's calls as they are now)
        hashes = {(c.call_id, c.result_hash) for c in now.pending}
        return all(
            (r.tool_call_id, convert.canonical_hash({"output": r.output, "is_error": r.is_error}))
            in hashes
            for r in results.results
        )

    def _start(self, view: RunView, body: RunAgentInput, ask: Ask, floor: int) -> Start:
        return Start(
            run_id=view.record.id,
            floor=floor,
            thread_id=body.thread_id,
            agui_run_id=body.run_id,
            known_results=ask.known_results,
            frontend=frontend_of(view),
        )


async def conversation(runs: RunService, run_id: str, principal: Principal) -> list[Entry]:
    """The run's whole conversation."""
    out: list[Entry] = []
    cursor: str | None = None
    while True:
        page, cursor = await runs.messages(run_id, limit=1000, cursor=cursor, scope=principal.scope)
        out.extend(page)
        if cursor is None:
            return out


def _calls(entry: Entry) -> Iterable[str]:
    content = entry.message.get("content")
    if entry.message.get("role") != "assistant" or isinstance(content, str):
        return
    for part in content or ():
        if part.get("type") == "toolcall":
            yield str(part.get("id"))


def calls_made(entries: list[Entry]) -> Iterable[str]:
    """The ids of the tool calls of the conversation's assistant messages."""
    for entry in entries:
        yield from _calls(entry)


def floor_after(entries: list[Entry], call_ids: set[str]) -> int:
    """The conversation index after the last assistant message that made one of
    `call_ids` (what the client was shown up to); none: the conversation's end."""
    for entry in reversed(entries):
        if call_ids & set(_calls(entry)):
            return entry.index + 1
    return len(entries)
