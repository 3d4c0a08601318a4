"""The one action route, POST /admin/runs/{id}/{name}: the form parsed once into its
typed action (`app.dashboard.actions`), a confirmation step, then one dispatch to the
service naming the logged-in actor.

Answers: an unknown action 404; an action the signed-in role may not take 403; an
unknown run as the service says (404); a form that does not parse 422 on the run page
with the errors beside the fields; a refusal by the service (409, ...) on the run page;
nothing is changed in any of these. A fork's success is the new run's page.
"""

from __future__ import annotations

from typing import Any, assert_never

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from starlette.datastructures import FormData

from app.core.scope import Scope
from app.dashboard import auth
from app.dashboard.actions import KINDS, PERMISSIONS, Action
from app.dashboard.actions.approvals import INBOX, Approve, Reject
from app.dashboard.actions.calls import Resolve, SubmitToolResults
from app.dashboard.actions.forks import Fork
from app.dashboard.actions.forms import Errors, Invalid
from app.dashboard.actions.runs import LIMIT_FIELDS, Cancel, ExtendExpiry, RaiseLimits, Retry
from app.dashboard.pages import detail_context
from app.dashboard.web import (
    Form,
    Session,
    approvals_of,
    error_page,
    forks_of,
    redirect,
    render,
    run_limits_of,
    scope_of,
    service_of,
)
from app.service import operator_actions as operator
from app.service.errors import ServiceError

router = APIRouter(prefix="/admin", include_in_schema=False)


def shown_errors(name: str, context: dict[str, Any]) -> set[str]:
    """The errors run.html shows beside the fields of action `name`'s form, given the
    page's context (a form that does not apply to the run now is not on the page)."""
    if name == SubmitToolResults.name and context["needs_results"]:
        return {"form"} | {f"output_{i}" for i in range(len(context["open_calls"]))}
    if name == Resolve.name and context["needs_resolution"]:
        return {"form", "action", "tool_name"}
    if name == ExtendExpiry.name and context["can_extend"]:
        return {"form", "minutes"}
    if name == RaiseLimits.name and context["can_raise_limits"]:
        return {"form", *LIMIT_FIELDS}
    if name in (Approve.name, Reject.name) and context["approvals"]:
        return {"form", "arguments" if name == Approve.name else "message"}
    return set()


async def perform(
    request: Request, run_id: str, action: Action, actor: str, scope: Scope
) -> str | None:
    """The service call of each action; a refusal raises `ServiceError`. The page to show
    after it when it is not the run's (a fork's: the new run's)."""
    service = service_of(request)
    match action:
        case Cancel():
            await service.cancel(run_id, actor=actor, scope=scope)
        case SubmitToolResults(body=body):
            await operator.submit_tool_results(service, run_id, body, actor, scope)
        case Resolve(body=body):
            await service.resolve(run_id, body, actor=actor, scope=scope)
        case ExtendExpiry(seconds=seconds):
            await operator.extend_expiry(service, run_id, seconds, actor, scope)
        case Retry():
            await operator.retry_run(service, run_id, actor, scope)
        case RaiseLimits(body=body):
            await run_limits_of(request).set_limits(run_id, body, actor=actor, scope=scope)
        case Approve(body=body) | Reject(body=body):
            await approvals_of(request).decide(run_id, body, actor=actor, scope=scope)
        case Fork(body=body, key=key):
            made, _ = await forks_of(request).fork(
                run_id, body, scope=scope, actor=actor, idempotency_key=key
            )
            return f"/admin/runs/{made.record.id}?done={action.name}"
        case _:
            assert_never(action)
    return None


async def refused(
    request: Request, run_id: str, session: auth.Session, exc: ServiceError
) -> HTMLResponse:
    """The service's refusal (409, ...) at the top of the run page."""
    try:
        context = await detail_context(request, run_id)
    except ServiceError as gone:
        return await error_page(request, gone.detail, gone.status)
    context["error"] = exc.detail
    return await render(request, "run.html", context, status_code=exc.status, session=session)


async def form_error(
    request: Request, run_id: str, session: auth.Session, name: str, form: FormData, errors: Errors
) -> HTMLResponse:
    """422 on the run page: the errors beside the action's fields, and all of them at the
    top when the page cannot show one there (the form does not apply to the run now, or
    names a field the page does not have)."""
    try:
        context = await detail_context(request, run_id)
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    if errors.keys() <= shown_errors(name, context):
        message = "Please correct the form below."
    else:
        listed = (v if k == "form" else f"{k}: {v}" for k, v in errors.items())
        message = "Nothing was changed: " + "; ".join(listed)
    values = {k: str(v) for k, v in form.items() if k != auth.CSRF_FIELD}
    context.update(error=message, form=values, form_errors=errors)
    return await render(request, "run.html", context, status_code=422, session=session)


@router.post("/runs/{run_id}/{action}", response_class=HTMLResponse)
async def run_action(
    request: Request, run_id: str, action: str, session: Session, form: Form
) -> Response:
    parse = KINDS.get(action)
    if parse is None:
        return await error_page(request, "unknown action", 404)
    if not session.can(PERMISSIONS[action]):  # a viewer: nothing is read or changed
        assert session.principal is not None
        raise auth.PermissionRefused(PERMISSIONS[action], session.principal)
    service = service_of(request)
    actor = session.actor
    assert actor is not None
    scope = await scope_of(request)
    try:
        view = await service.get_run(run_id, scope=scope)
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    parsed = parse(form, view)
    if isinstance(parsed, Invalid):
        return await form_error(request, run_id, session, action, form, parsed.errors)
    if form.get("confirmed") != "yes":
        context = {
            "run": view.record,
            "action": parsed.name,
            "summary": parsed.summary(),
            "fields": parsed.fields(),
            "back": "/admin/approvals" if form.get("return_to") == INBOX else None,
            "edited": isinstance(parsed, Approve) and parsed.edited,
            "replay": isinstance(parsed, Fork) and parsed.replay,
        }
        return await render(request, "confirm.html", context, session=session)
    try:
        shown = await perform(request, run_id, parsed, actor, scope)
    except ServiceError as exc:
        return await refused(request, run_id, session, exc)
    if shown is not None:
        return redirect(shown)
    if form.get("return_to") == INBOX:  # (an approval decided from the inbox)
        return redirect(f"/admin/approvals?done={parsed.name}")
    return redirect(f"/admin/runs/{run_id}?done={parsed.name}")
