"""The approvals inbox, /admin/approvals: the gated tool calls of the tenant's runs that
wait for a decision, newest first, each with its tool, arguments, run and age, and the
forms that approve, reject (with a message to the model) or approve with edited arguments.

Each form posts to the run's action route (`app.dashboard.perform`: the `approve` and
`reject` actions, a confirmation step, CSRF, `runs:approve`) with `return_to=inbox`, so
the confirmed decision comes back here. A form that does not parse, or a decision the
service refuses (a stale hash: the arguments changed), is shown on the run's page, which
lists its pending approvals with the same forms. The page does not refresh itself (a
message being typed would be lost): it says so and offers a reload.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.dashboard import actions, present
from app.dashboard.web import Session, approvals_of, now, render, tenant_of
from app.service.errors import ServiceError

router = APIRouter(prefix="/admin", include_in_schema=False)

PAGE_SIZE = 25
FLASH = {k: actions.DONE[k] for k in (actions.Approve.name, actions.Reject.name)}


@router.get("/approvals", response_class=HTMLResponse)
async def inbox(
    request: Request, session: Session, cursor: str | None = None, done: str | None = None
) -> HTMLResponse:
    error = None
    try:
        calls, next_cursor = await approvals_of(request).pending(
            tenant=await tenant_of(request), limit=PAGE_SIZE, cursor=cursor
        )
    except ServiceError as exc:  # a malformed cursor: the first page, and why
        error = exc.detail
        calls, next_cursor = await approvals_of(request).pending(
            tenant=await tenant_of(request), limit=PAGE_SIZE, cursor=None
        )
    context: dict[str, Any] = {
        "awaiting": present.pending_of(calls, now(request)),
        "next_cursor": next_cursor,
        "cursor": cursor,
        "error": error,
        "flash": FLASH.get(done or ""),
        "return_to": actions.INBOX,
        "form": {},
        "form_errors": {},
    }
    return await render(request, "approvals.html", context, session=session)
