"""What a request's answers and `resume` entries would write to the run they answer,
checked whole against the run as read before the first write, so a request refused at
any part of it (a permission, an answer, a decision, a cancel) writes nothing.

- A tool message answers a call of the run's frontend tools (the run's `origin` mark
  names them) that waits for its result: the agent's own tools' calls (queues, webhooks,
  agent tools, the agent's client tools) are their executors' to answer, and a gated call
  is answered once a decision approves it (this request's own included). A message for a
  call answered already, or of a round that is over, is left alone.
- Decisions go to `ApprovalService.decide`, which refuses all of them or none.
- A cancel (an operator's interrupt abandoned) only while the run waits on that
  interrupt; it is written last.

A browser token answers and decides; it never cancels (the API refuses a token's cancel
too) and never starts a turn."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from app.protocols.agui.inputs import Answer, Ask
from app.protocols.agui.interrupts import resumed
from app.service.errors import InvalidRequest, ToolCallNotPending
from app.service.principals import Permission, Principal
from app.service.runs import RunView
from app.service.schemas import DecisionsIn, ToolResultsIn

M = TypeVar("M", bound=BaseModel)

#: What a browser token may do over AG-UI besides following its run.
TOKEN_MAY = frozenset({Permission.TOOL_RESULTS_SUBMIT, Permission.RUNS_APPROVE})


class Refused(Exception):
    """The caller may not do what the request asks (the route renders it 403)."""

    def __init__(self, permission: Permission) -> None:
        super().__init__(permission.value)
        self.permission = permission


def need(principal: Principal, permission: Permission) -> None:
    """`Refused` unless the caller holds `permission`. A browser token (confined to the
    thread's run already) may answer and decide (`TOKEN_MAY`); never start a turn or
    cancel the run."""
    if principal.run_id is not None:
        if permission not in TOKEN_MAY:
            raise Refused(permission)
    elif not principal.can(permission):
        raise Refused(permission)


@dataclass(frozen=True, slots=True)
class Writes:
    """What a request writes to the run it answers, in this order."""

    decisions: DecisionsIn | None
    results: ToolResultsIn | None
    cancel: bool

    @property
    def decided(self) -> set[str]:
        return {d.tool_call_id for d in self.decisions.decisions} if self.decisions else set()


def writes_of(view: RunView, ask: Ask, principal: Principal, frontend: frozenset[str]) -> Writes:
    """The writes `ask` makes to the run of `view`, every one of them checked (a refusal
    raises: 403, 422)."""
    plan = resumed(ask.resume)
    if plan.decisions:
        need(principal, Permission.RUNS_APPROVE)
    if plan.cancels:
        need(principal, Permission.RUNS_CANCEL)
    approved = {d.tool_call_id for d in plan.decisions if d.action == "approve"}
    answers = answerable(view, ask.answers, frontend, approved)
    if answers:
        need(principal, Permission.TOOL_RESULTS_SUBMIT)
    cancel = plan.cancel(view)
    decisions = [d.model_dump(exclude_none=True) for d in plan.decisions]
    results = [
        {"tool_call_id": a.call_id, "output": a.output, "is_error": a.is_error} for a in answers
    ]
    return Writes(
        model(DecisionsIn, {"decisions": decisions}, "resume") if decisions else None,
        model(ToolResultsIn, {"results": results}, "messages") if results else None,
        cancel,
    )


def answerable(
    view: RunView, answers: Sequence[Answer], frontend: frozenset[str], approved: set[str]
) -> list[Answer]:
    """The answers to submit: those for calls of the waiting round that wait for their
    result (the same answer twice: once); 422 `tool-call-not-pending` for a call of the
    agent's own tools or one still awaiting a decision this request does not approve."""
    calls = view.pending if view.record.waiting_round is not None else []
    given: dict[str, list[Answer]] = {}
    for a in answers:
        if a not in given.setdefault(a.call_id, []):
            given[a.call_id].append(a)
    out: list[Answer] = []
    for call_id, distinct in given.items():
        open_ = [
            c for c in calls if c.call_id == call_id and c.result_hash is None and not c.preresolved
        ]
        if not open_:  # (answered already, or its round is over: left alone)
            continue
        takers = [c for c in open_ if not c.awaits_approval or call_id in approved]
        if not takers:
            raise ToolCallNotPending(
                f"messages: a tool message answers {call_id!r}, which awaits a decision: "
                "approve it (a resume entry) before answering it",
                tool_call_id=call_id,
            )
        for call in takers[: len(distinct)]:
            if call.name not in frontend or call.child_run_id is not None:
                raise ToolCallNotPending(
                    f"messages: a tool message answers {call_id!r}, a call of the agent's "
                    f"own tool {call.name!r}: its executor answers it, not the frontend",
                    tool_call_id=call_id,
                )
        if len(distinct) > len(takers):
            raise InvalidRequest(
                f"messages: {len(distinct)} different tool messages answer {call_id!r}"
            )
        out.extend(distinct)
    return out


def model(cls: type[M], doc: dict[str, Any], where: str) -> M:
    """`doc` as the service's body `cls` (422 naming the first field that is wrong)."""
    try:
        return cls.model_validate(doc)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(p) for p in error["loc"])
        raise InvalidRequest(f"{where}: {field}: {error['msg']}") from None
