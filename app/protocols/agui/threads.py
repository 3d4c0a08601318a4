"""AG-UI threads as conversations of an agent's runs, and what a request does to one.

A thread is named by its client (`threadId`); its conversation by its first run's id.
No table joins the two: the thread's first run is created with the idempotency key
`ag-ui:<agent>:<sha256(threadId)>` and found again by it (keys are per tenant), each later
turn with `…:<sha256(runId)>`, so a retried request finds the run it made instead of
making another. A request then starts a turn (a new user message: the thread's first
run, or the next run of its conversation), or answers the run it waits on (tool messages
for its frontend calls, `resume` entries for its interrupts); every change is made
before the response starts, so a refused request is an HTTP problem and changes nothing
(or, answering with both, nothing after the refused part)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from ag_ui.core import RunAgentInput

from app.approvals.service import ApprovalService
from app.core.lifecycle import RunStatus
from app.protocols.agui.inputs import Ask
from app.protocols.agui.interrupts import resumed
from app.protocols.agui.stream import Start, frontend_of
from app.protocols.sessions import Sessions, Turn
from app.service import lineage
from app.service.errors import RunNotFound, RunStateConflict, ToolCallNotPending
from app.service.messages import Entry
from app.service.principals import Permission, Principal
from app.service.runs import RunService, RunView
from app.service.schemas import DecisionsIn, ToolResultsIn
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


class Refused(Exception):
    """The caller may not do what the request asks (the route renders it 403)."""

    def __init__(self, permission: Permission) -> None:
        super().__init__(permission.value)
        self.permission = permission


@dataclass(frozen=True, slots=True)
class Threads:
    sessions: Sessions
    approvals: ApprovalService

    @property
    def runs(self) -> RunService:
        return self.sessions.runs

    async def begin(self, agent: str, body: RunAgentInput, ask: Ask, principal: Principal) -> Start:
        """Do what the request asks; where its stream starts."""
        scope = principal.scope
        first = await self.runs.by_idempotency_key(thread_key(agent, body.thread_id), scope=scope)
        if first is not None and (lineage.agent_of(first) or {}).get("name") != agent:
            first = None  # (a key this protocol did not make)
        if ask.prompt is not None:
            return await self._turn(agent, body, ask, principal, first)
        if first is None:
            raise RunNotFound(f"the agent {agent} has no AG-UI thread {body.thread_id!r}")
        head = await self.sessions.head(agent, first.id, scope)
        if principal.run_id is not None and principal.run_id != head.id:
            raise RunNotFound(f"no run with id {principal.run_id}")
        return await self._answer(head, body, ask, principal)

    # --- a new user message -------------------------------------------------------------

    async def _turn(
        self,
        agent: str,
        body: RunAgentInput,
        ask: Ask,
        principal: Principal,
        first: RunRecord | None,
    ) -> Start:
        need(principal, Permission.RUNS_CREATE, token=False)
        scope = principal.scope
        origin = {
            "protocol": PROTOCOL,
            "thread_id": body.thread_id,
            "run_id": body.run_id,
            "frontend_tools": [t["name"] for t in ask.tools],
        }
        if first is None:
            turn = Turn(
                agent,
                ask.prompt or "",
                principal.tenant,
                principal.actor,
                origin,
                tools=ask.tools,
                history=ask.history,
                idempotency_key=thread_key(agent, body.thread_id),
                stream=True,
            )
            view = await self.sessions.start(turn)
            return self._start(view, body, ask, 0)
        if (lineage.origin_of(first) or {}).get("run_id") == body.run_id:
            return self._start(await self.runs.get_run(first.id, scope=scope), body, ask, 0)
        key = turn_key(agent, body.thread_id, body.run_id)
        made = await self.runs.by_idempotency_key(key, scope=scope)
        if made is not None:  # (a retried request: the run it made)
            return self._start(await self.runs.get_run(made.id, scope=scope), body, ask, 0)
        if ask.resume:  # (the interrupts of the run the new message replaces)
            head = await self.sessions.head(agent, first.id, scope)
            await self._resume(head, ask, principal)
        turn = Turn(
            agent,
            ask.prompt or "",
            principal.tenant,
            principal.actor,
            origin,
            conversation=first.id,
            tools=ask.tools,
            if_busy="interrupt",
            idempotency_key=key,
            stream=True,
        )
        return self._start(await self.sessions.start(turn), body, ask, 0)

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
        waiting = {c.call_id for c in view.pending if c.result_hash is None}
        if view.record.status != RunStatus.REQUIRES_ACTION:
            waiting = set()
        answers = [a for a in ask.answers if a.call_id in waiting]  # (others: answered)
        decided = await self._resume(head, ask, principal)
        if answers:
            need(principal, Permission.TOOL_RESULTS_SUBMIT)
            results = [
                {"tool_call_id": a.call_id, "output": a.output, "is_error": a.is_error}
                for a in answers
            ]
            await self.runs.submit_tool_results(
                ToolResultsIn.model_validate({"results": results}),
                run_id=head.id,
                actor=principal.actor,
                scope=scope,
            )
        answered = {a.call_id for a in ask.answers} | decided
        return self._start(view, body, ask, floor_after(entries, answered))

    async def _resume(self, head: RunRecord, ask: Ask, principal: Principal) -> set[str]:
        """Decide the gated calls `resume` answers (and cancel the run when an operator's
        interrupt is abandoned); the call ids decided."""
        if not ask.resume:
            return set()
        scope = principal.scope
        plan = resumed(ask.resume)
        if plan.decisions:
            need(principal, Permission.RUNS_APPROVE)
            await self.approvals.decide(
                head.id,
                DecisionsIn.model_validate(
                    {"decisions": [d.model_dump(exclude_none=True) for d in plan.decisions]}
                ),
                actor=principal.actor,
                scope=scope,
            )
        if plan.cancel:
            need(principal, Permission.RUNS_CANCEL)
            try:
                await self.runs.cancel(head.id, actor=principal.actor, scope=scope)
            except RunStateConflict:  # (it ended meanwhile: the stream says how)
                pass
        return {d.tool_call_id for d in plan.decisions}

    def _start(self, view: RunView, body: RunAgentInput, ask: Ask, floor: int) -> Start:
        return Start(
            run_id=view.record.id,
            floor=floor,
            thread_id=body.thread_id,
            agui_run_id=body.run_id,
            known_results=ask.known_results,
            frontend=frontend_of(view),
        )


def need(principal: Principal, permission: Permission, *, token: bool = True) -> None:
    """`Refused` unless the caller holds `permission`; a browser token (confined to the
    thread's run already) may answer its run (`token`), never start one."""
    if principal.run_id is not None:
        if token:
            return
        raise Refused(permission)
    if not principal.can(permission):
        raise Refused(permission)


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
