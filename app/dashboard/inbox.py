"""The approvals inbox, /admin/approvals: the gated tool calls that wait for a decision,
newest first, each on a card with what a person needs to judge it: the run's prompt, its
agent, the model's text of the turn that asked for the call, the round's other calls,
and how long it has waited against its deadline (`app.approvals.inbox`, read for the
whole page at once). Filters by tool, agent and, for a deployment's admins, tenant
(`web.viewing`: another tenant's calls are shown read-only).

Each card's forms post to the run's action route (`app.dashboard.perform`: `approve`,
`reject`, a confirmation step, CSRF, `runs:approve`) with `return_to=inbox`; its checkbox
joins the bulk form (`app.dashboard.bulk`). The page polls `/admin/approvals/poll` every
few seconds, telling it which cards it shows: the answer holds only the cards not shown
yet (prepended) and deletes, out of band, the ones no longer waiting, so a message being
typed or a box ticked is never lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from app.approvals.inbox import CallKey, Context, InboxFilter, InboxRow
from app.dashboard import actions, auth, present
from app.dashboard.actions.approvals import INBOX, Approve, Reject
from app.dashboard.web import (
    SECURITY_HEADERS,
    Session,
    Viewed,
    Viewing,
    approvals_of,
    now,
    render,
)
from app.service.errors import ServiceError
from app.service.principals import Permission
from app.service.types import ToolCallRecord

router = APIRouter(prefix="/admin", include_in_schema=False)

PAGE_SIZE = 25
#: Characters of a prompt or a model's text a card shows before "show all".
EXCERPT = 300
#: The most cards a poll may say the page shows.
MAX_SHOWN = 500
#: The longest tool or agent name a filter takes (a tool's name is at most 255).
MAX_NAME = 255
FLASH = {k: actions.DONE[k] for k in (Approve.name, Reject.name)}
KEY = re.compile(r"([A-Za-z0-9_-]{1,40}):(\d{1,9}):(\d{1,9})", re.ASCII)


def key_of(call: ToolCallRecord) -> str:
    """A gated call's key on the page: `run id:round:position`."""
    return f"{call.run_id}:{call.round}:{call.position}"


def slot_of(key: str) -> str:
    return "card-" + key.replace(":", "-")


def parse_key(text: str) -> CallKey | None:
    match = KEY.fullmatch(text)
    if match is None:
        return None
    return match.group(1), int(match.group(2)), int(match.group(3))


def order_of(call: ToolCallRecord) -> tuple[datetime, str, int, int]:
    """Where a call sorts in the inbox (newest first: the greatest first)."""
    at = call.approval_requested_at or datetime.min.replace(tzinfo=UTC)
    return at, call.run_id, call.round, call.position


def call_state(call: ToolCallRecord) -> str:
    """What became of a call of the round, in a few words."""
    if call.awaits_approval:
        return "awaits approval"
    if call.approval is not None:
        return f"{call.approval} by {call.decided_by or 'nobody recorded'}"
    if call.result_hash is not None or call.preresolved:
        return "answered"
    if call.child_run_id:
        return "its child run answers it"
    return "open: its executor answers it"


@dataclass(frozen=True, slots=True)
class Card:
    """A pending approval as the inbox shows it. `acts`: the signed-in person may decide
    it (their role holds `runs:approve`, and it is their own tenant's)."""

    pending: present.Pending
    agent: str | None  # name@version
    tenant: str
    context: Context | None
    acts: bool

    @property
    def call(self) -> ToolCallRecord:
        return self.pending.call

    @property
    def key(self) -> str:
        return key_of(self.call)

    @property
    def slot(self) -> str:
        """The id of the element that holds the card on the inbox (what a poll deletes)."""
        return slot_of(self.key)

    @property
    def choice(self) -> str:
        """The bulk form's value for it: the key and the hash of the arguments shown."""
        return f"{self.key}:{self.pending.arguments_hash}"

    @property
    def others(self) -> list[tuple[ToolCallRecord, str]]:
        """The other calls of its round, each with what became of it."""
        calls = self.context.round_calls if self.context else ()
        return [(c, call_state(c)) for c in calls if c.position != self.call.position]

    @property
    def waited_share(self) -> float | None:
        """How much of its time before the deadline it has waited (0 to 1)."""
        age, left = self.pending.age, self.pending.due_in
        if age is None or left is None:
            return None
        total = age + left
        return 1.0 if total <= 0 else min(1.0, max(0.0, age / total))


@dataclass(slots=True)
class Listing:
    """The page's filters as asked (`tool`, `agent`, `viewing`) and its cursor; a filter
    that cannot be used is dropped with its error."""

    tool: str
    agent: str
    viewing: Viewing
    cursor: str | None
    errors: list[str] = field(default_factory=list)

    @property
    def filter(self) -> InboxFilter:
        return InboxFilter(self.viewing.scope, self.tool or None, self.agent or None)

    def params(self, **changes: str | None) -> dict[str, str]:
        values: dict[str, str | None] = {
            "tool": self.tool,
            "agent": self.agent,
            **self.viewing.param,
            "cursor": self.cursor,
        }
        values.update(changes)
        return {k: v for k, v in values.items() if v}

    def query(self, **changes: str | None) -> str:
        """The query string of this page (with `changes`), for links and the poll."""
        return urlencode(self.params(**changes))


def _name(value: str | None, what: str, errors: list[str]) -> str:
    text = (value or "").strip()
    if "\x00" in text:
        errors.append(f"{what} filter: a name cannot hold a NUL character")
        return ""
    if len(text) > MAX_NAME:
        errors.append(f"{what} filter: a name has at most {MAX_NAME} characters")
        return ""
    return text


def listing_of(seen: Viewing, tool: str | None, agent: str | None, cursor: str | None) -> Listing:
    errors: list[str] = []
    if seen.error:
        errors.append(seen.error)
    return Listing(
        _name(tool, "tool", errors), _name(agent, "agent", errors), seen, cursor or None, errors
    )


async def cards_of(request: Request, rows: list[InboxRow], session: auth.Session) -> list[Card]:
    """The cards of these pending approvals, their runs' context read for all at once."""
    contexts = await approvals_of(request).contexts([r.call for r in rows])
    own = (await auth.dashboard_principal(request)).tenant
    decides = session.can(Permission.RUNS_APPROVE)
    pending = present.pending_of([r.call for r in rows], now(request))
    return [
        Card(
            p,
            f"{r.agent_name}@{r.agent_version}" if r.agent_name is not None else None,
            r.call.tenant_id,
            contexts.get(r.call.run_id),
            decides and r.call.tenant_id == own,
        )
        for p, r in zip(pending, rows, strict=True)
    ]


async def page_context(
    request: Request,
    session: auth.Session,
    listing: Listing,
    *,
    selected: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """What approvals.html shows (the bulk form's error page too: `selected`, the
    boxes it had ticked)."""
    approvals = approvals_of(request)
    try:
        rows, next_cursor = await approvals.inbox(
            listing.filter, limit=PAGE_SIZE, cursor=listing.cursor
        )
    except ServiceError as exc:  # a malformed cursor: the first page, and why
        listing.errors.append(exc.detail)
        listing.cursor = None
        rows, next_cursor = await approvals.inbox(listing.filter, limit=PAGE_SIZE, cursor=None)
    cards = await cards_of(request, rows, session)
    return {
        "cards": cards,
        "listing": listing,
        "next_cursor": next_cursor,
        "cursor": listing.cursor,
        "errors": listing.errors,
        "flash": None,
        "return_to": INBOX,
        "form": {},
        "form_errors": {},
        "selected": selected,
        "excerpt": EXCERPT,
        "now": now(request),
    }


@router.get("/approvals", response_class=HTMLResponse)
async def inbox(
    request: Request,
    session: Session,
    view: Viewed,
    cursor: str | None = None,
    done: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
) -> HTMLResponse:
    listing = listing_of(view, tool, agent, cursor)
    context = await page_context(request, session, listing)
    context["flash"] = FLASH.get(done or "")
    return await render(request, "approvals.html", context, session=session)


def _bad(message: str) -> Response:
    """A poll the page did not send (its keys are its own cards'): 400, nothing read."""
    return PlainTextResponse(message, status_code=400, headers=SECURITY_HEADERS)


@router.get("/approvals/poll", response_class=HTMLResponse)
async def poll(
    request: Request,
    session: Session,
    view: Viewed,
    shown: Annotated[list[str], Query()] = [],  # noqa: B006  (FastAPI's form of a list)
    cursor: str | None = None,
    tool: str | None = None,
    agent: str | None = None,
) -> Response:
    """The cards of the first page that the page does not show yet and that sort after
    its oldest (on the first page only; a call can commit after a newer one was shown:
    its worker's clock stamped it), and an out-of-band delete of each card it shows that
    no longer waits."""
    if len(shown) > MAX_SHOWN:  # (a page left open a long time: reload it, trimmed)
        return Response(status_code=200, headers={"HX-Refresh": "true", **SECURITY_HEADERS})
    keys = [k for k in map(parse_key, shown) if k is not None]
    if len(keys) < len(shown):
        return _bad("shown: expected run id:round:position")
    listing = listing_of(view, tool, agent, cursor)
    approvals = approvals_of(request)
    named = await approvals.named(keys, scope=listing.viewing.scope)
    waiting = {key_of(c) for c, awaiting in named if awaiting}
    gone = [k for k in dict.fromkeys(shown) if k not in waiting]
    fresh: list[InboxRow] = []
    if listing.cursor is None:
        oldest = min((order_of(c) for c, _ in named), default=None)
        rows, _ = await approvals.inbox(listing.filter, limit=PAGE_SIZE, cursor=None)
        fresh = [
            r
            for r in rows
            if key_of(r.call) not in shown and (oldest is None or order_of(r.call) > oldest)
        ]
    context: dict[str, Any] = {
        "cards": await cards_of(request, fresh, session),
        "gone": [slot_of(k) for k in gone],
        "remaining": len(waiting) + len(fresh),
        "listing": listing,
        "return_to": INBOX,
        "form": {},
        "form_errors": {},
        "selected": frozenset(),
        "excerpt": EXCERPT,
        "now": now(request),
    }
    return await render(request, "_inbox_poll.html", context, session=session)
