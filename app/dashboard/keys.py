"""The dashboard's API keys page, /admin/keys: the signed-in admin's tenant's keys, each
revoked or rotated after a confirmation step (CSRF-checked like every action). A rotation
shows the new secret once, on the answer to the confirmed POST, and nowhere after.

The principal is the session's (a person, an API-key login of AGENTRUN_API_KEYS, or open
mode: app.dashboard.auth), and only a principal holding keys:manage sees the page; it
manages the keys of that principal's tenant.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response

from app.dashboard import auth
from app.dashboard.web import Form, error_page, redirect, render, requiring
from app.service.errors import ServiceError
from app.service.principals import Permission, Principal
from app.tenancy.keys import KeyAdmin

router = APIRouter(prefix="/admin/keys", include_in_schema=False)

#: The grace periods the rotate form offers (value: seconds).
GRACE = {"0": "none: the old secret stops now", "3600": "1 hour", "86400": "1 day"}


#: The signed-in session, whose role must hold keys:manage (a 403 page otherwise).
Manager = Annotated[auth.Session, Depends(requiring(Permission.KEYS_MANAGE))]


def principal_of(session: auth.Session) -> Principal:
    if session.principal is None:  # (never: `requiring` lets signed-in sessions through)
        raise auth.LoginRequired("/admin/keys")
    return session.principal


def admin_of(request: Request) -> KeyAdmin:
    keys: KeyAdmin = request.app.state.keys
    return keys


async def _page(
    request: Request, session: auth.Session, principal: Principal, **extra: object
) -> HTMLResponse:
    views = await admin_of(request).list(principal.scope)
    context = {"keys": views, "tenant": principal.tenant, "grace": GRACE, **extra}
    return await render(request, "keys.html", context, session=session)


@router.get("", response_class=HTMLResponse)
async def keys_page(request: Request, session: Manager, done: str | None = None) -> HTMLResponse:
    principal = principal_of(session)
    flash = {"revoked": "The key is revoked: every API process refuses it within a second."}
    return await _page(request, session, principal, flash=flash.get(done or ""))


@router.post("/{key_id}/{action}", response_class=HTMLResponse)
async def key_action(
    request: Request, key_id: str, action: str, session: Manager, form: Form
) -> Response:
    principal = principal_of(session)
    if action not in ("revoke", "rotate"):
        return await error_page(request, "unknown action", 404)
    keys = admin_of(request)
    grace_field = str(form.get("grace") or "3600")
    if action == "rotate" and grace_field not in GRACE:
        return await _page(
            request, session, principal, error="Choose a grace period from the list."
        )
    try:
        key = await keys.get(key_id, principal.scope)
        if form.get("confirmed") != "yes":
            context = {"key": key, "action": action, "grace_field": grace_field, "grace": GRACE}
            return await render(request, "key_confirm.html", context, session=session)
        if action == "revoke":
            await keys.revoke(key_id, principal.scope)
            return redirect("/admin/keys?done=revoked")
        old, issued = await keys.rotate(
            key_id,
            timedelta(seconds=int(grace_field)),
            principal.scope,
            created_by=principal.actor,
        )
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    context = {"old": old, "issued": issued}
    return await render(request, "key_secret.html", context, session=session)
