"""Bulk decisions from the approvals inbox, POST /admin/approvals/bulk: the calls ticked
on the inbox (`call`: `run id:round:position:arguments hash`), approved or rejected (one
`message` for all) after one confirmation page that lists them.

The confirmed form decides each call on its own, through the same service call as a
single decision (`ApprovalService.decide`, naming the signed-in actor, in their tenant),
so each is recorded as its own decision; the page then reports what became of each. A
call decided meanwhile, or whose arguments changed (a stale hash), or not found among
the person's tenant's runs, is reported, not fatal: the others are still decided. A form
that does not parse is the inbox again with the error (422), nothing decided; CSRF and
`runs:approve` as for a single decision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError
from starlette.datastructures import FormData

from app.approvals.inbox import CallKey
from app.core.lifecycle import ApprovalStatus
from app.dashboard import auth, inbox, present
from app.dashboard.web import Form, approvals_of, render, requiring, scope_of, viewing
from app.service.errors import ServiceError
from app.service.principals import Permission
from app.service.schemas import DecisionsIn
from app.service.types import ToolCallRecord

router = APIRouter(prefix="/admin", include_in_schema=False)
Decider = Annotated[auth.Session, Depends(requiring(Permission.RUNS_APPROVE))]

#: The most calls one bulk decision takes.
MAX_CALLS = 100
ACTIONS = ("approve", "reject")
CHOICE = re.compile(r"([A-Za-z0-9_-]{1,40}):(\d{1,9}):(\d{1,9}):([0-9a-f]{64})", re.ASCII)


@dataclass(frozen=True, slots=True)
class Choice:
    """A ticked call: its key and the hash of the arguments the page showed."""

    key: CallKey
    arguments_hash: str

    @property
    def value(self) -> str:
        return ":".join(map(str, self.key)) + ":" + self.arguments_hash


@dataclass(frozen=True, slots=True)
class Bulk:
    action: str  # approve | reject
    choices: tuple[Choice, ...]
    message: str | None  # reject: what the model is told

    def body(self, call: ToolCallRecord, choice: Choice) -> DecisionsIn:
        item: dict[str, Any] = {
            "tool_call_id": call.call_id,
            "arguments_hash": choice.arguments_hash,
            "position": call.position,
            "action": self.action,
        }
        if self.message is not None:
            item["message"] = self.message
        return DecisionsIn.model_validate({"decisions": [item]})


def parse(form: FormData) -> Bulk | str:
    """The bulk form, or what is wrong with it."""
    action = form.get("action")
    if action not in ACTIONS:
        return "choose Approve selected or Reject selected"
    values = form.getlist("call")
    if not values:
        return "Tick at least one tool call to decide."
    if len(values) > MAX_CALLS:
        return f"At most {MAX_CALLS} tool calls can be decided at once."
    choices: dict[CallKey, Choice] = {}
    for value in values:
        match = CHOICE.fullmatch(value) if isinstance(value, str) else None
        if match is None:
            return "call: expected run id:round:position:arguments hash, as the inbox sends it"
        key = (match.group(1), int(match.group(2)), int(match.group(3)))
        choice = Choice(key, match.group(4))
        if choices.setdefault(key, choice) != choice:
            return f"call: run {key[0]}'s call at {key[1]}:{key[2]} is ticked twice"
    raw = form.get("message")
    message = raw.strip() if isinstance(raw, str) else ""
    if action == "reject" and not message:
        return "Rejecting: say why in the message to the model (it receives it)."
    if action == "reject":
        problem = _message_problem(message)
        if problem:
            return problem
    return Bulk(str(action), tuple(choices.values()), message if action == "reject" else None)


def _message_problem(message: str) -> str | None:
    """What a single decision's checks refuse in the message (its length, a NUL...)."""
    item = {"tool_call_id": "-", "arguments_hash": "-", "action": "reject", "message": message}
    try:
        DecisionsIn.model_validate({"decisions": [item]})
    except ValidationError as exc:
        return "message: " + "; ".join(str(e["msg"]) for e in exc.errors())
    return None


@dataclass(frozen=True, slots=True)
class Item:
    """A ticked call as the confirmation and the report show it: the call (None: none
    of the person's tenant has that key), whether it awaits a decision, and the outcome."""

    choice: Choice
    call: ToolCallRecord | None
    awaiting: bool
    outcome: str = ""
    decided: bool = False

    @property
    def arguments(self) -> str:
        return present.preview(self.call.arguments, 400) if self.call else "—"

    @property
    def state(self) -> str:
        if self.call is None:
            return "not found among your tenant's approvals"
        if self.awaiting:
            return "awaits a decision"
        if self.call.approval in (ApprovalStatus.APPROVED, ApprovalStatus.REJECTED):
            return f"no longer waiting: {self.call.approval} by {self.call.decided_by}"
        return "no longer waiting: its run moved on"


async def items_of(request: Request, bulk: Bulk) -> list[Item]:
    """The ticked calls as they are now (one read), in the order ticked."""
    keys = [c.key for c in bulk.choices]
    found = await approvals_of(request).named(keys, scope=await scope_of(request))
    calls = {(c.run_id, c.round, c.position): (c, awaiting) for c, awaiting in found}
    return [Item(c, *calls.get(c.key, (None, False))) for c in bulk.choices]


async def decide(request: Request, bulk: Bulk, item: Item, actor: str) -> Item:
    """One ticked call decided as a single decision is; a refusal is its outcome."""
    if item.call is None or not item.awaiting:
        return Item(item.choice, item.call, item.awaiting, item.state)
    try:
        await approvals_of(request).decide(
            item.call.run_id,
            bulk.body(item.call, item.choice),
            actor=actor,
            scope=await scope_of(request),
        )
    except ServiceError as exc:
        return Item(item.choice, item.call, item.awaiting, f"not decided: {exc.detail}")
    done = ApprovalStatus.APPROVED if bulk.action == "approve" else ApprovalStatus.REJECTED
    return Item(item.choice, item.call, item.awaiting, done.value, decided=True)


async def refused(
    request: Request, session: auth.Session, form: FormData, error: str
) -> HTMLResponse:
    """The inbox again, with the error and the boxes that were ticked (422)."""
    listing = await _listing(request, form)
    selected = frozenset(v for v in form.getlist("call") if isinstance(v, str))
    context = await inbox.page_context(request, session, listing, selected=selected)
    context["errors"] = [*context["errors"], f"Nothing was decided: {error}"]
    context["form"] = {"message": _text(form, "message") or ""}
    return await render(request, "approvals.html", context, status_code=422, session=session)


async def _listing(request: Request, form: FormData) -> inbox.Listing:
    """The inbox's filters the bulk form carries (to go back to, or show its error on)."""
    tool, agent, tenant = (_text(form, k) for k in ("tool", "agent", "tenant"))
    return inbox.listing_of(await viewing(request, tenant or ""), tool, agent, None)


def _text(form: FormData, name: str) -> str | None:
    value = form.get(name)
    return value if isinstance(value, str) else None


@router.post("/approvals/bulk", response_class=HTMLResponse)
async def bulk_decide(request: Request, session: Decider, form: Form) -> HTMLResponse:
    parsed = parse(form)
    if isinstance(parsed, str):
        return await refused(request, session, form, parsed)
    items = await items_of(request, parsed)
    back = await _listing(request, form)
    context: dict[str, Any] = {
        "bulk": parsed,
        "back": "/admin/approvals" + (f"?{back.query()}" if back.query() else ""),
        "filters": back.params(),
    }
    if form.get("confirmed") != "yes":
        context["items"] = items
        return await render(request, "bulk_confirm.html", context, session=session)
    actor = session.actor
    assert actor is not None
    context["items"] = [await decide(request, parsed, item, actor) for item in items]
    return await render(request, "bulk_done.html", context, session=session)
