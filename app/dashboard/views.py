"""The dashboard's routes under /admin: runs (suspended first), run detail, actions
behind a confirmation step, overview, login and logout.

Every POST carries the session's CSRF token; every action passes the logged-in actor to
the service so the event log says who did it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from pydantic import ValidationError
from starlette.datastructures import FormData

from app.core.lifecycle import TERMINAL, RunStatus, Transition, sources
from app.dashboard import auth, present
from app.service import conversations, operator
from app.service.errors import ServiceError
from app.service.reads import RunReads
from app.service.runs import RunService, RunView
from app.service.schemas import ResolutionIn, ToolResultsIn
from app.service.types import BadCursor, RunFilter, RunRecord

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["duration"] = present.duration
templates.env.filters["ts"] = present.timestamp
templates.env.filters["preview"] = present.preview
templates.env.filters["json"] = present.to_json

router = APIRouter(prefix="/admin", include_in_schema=False)

PAGE_SIZE = 25
REFRESH_SECONDS = 3
META_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
PROVIDERS = ("openai", "openai_responses", "anthropic", "scripted")
ACTIONS = ("cancel", "tool-results", "resolve", "extend", "retry")
DONE = {
    "cancel": "The run was cancelled.",
    "tool-results": "The tool results were submitted.",
    "resolve": "The invalid tool call was resolved.",
    "extend": "The expiry was extended.",
    "retry": "The run was queued again.",
    "login": "Logged in.",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


# --- dependencies and responses --------------------------------------------------------


async def logged_in(request: Request) -> auth.Session:
    session = await auth.load_session(request)
    if not session.logged_in:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        raise auth.LoginRequired(target)
    return session


async def checked_form(request: Request) -> FormData:
    """The POSTed form, refused (403, nothing changed) without the session's CSRF token."""
    session = await auth.load_session(request)
    form = await request.form()
    if not auth.csrf_ok(session, form.get(auth.CSRF_FIELD)):
        raise auth.CsrfRefused()
    return form


Session = Annotated[auth.Session, Depends(logged_in)]
Form = Annotated[FormData, Depends(checked_form)]


def service_of(request: Request) -> RunService:
    service: RunService = request.app.state.service
    return service


def reads_of(request: Request) -> RunReads:
    reads: RunReads = request.app.state.reads
    return reads


def client_address(request: Request) -> str:
    """The address failed logins are throttled by: what uvicorn reports, as for the API's
    bearer keys (the throttle, `app.state.auth_throttle`, is the API's and shared)."""
    return request.client.host if request.client else "unknown"


async def render(
    request: Request,
    name: str,
    context: dict[str, Any],
    *,
    status_code: int = 200,
    session: auth.Session | None = None,
) -> HTMLResponse:
    session = session or await auth.load_session(request)
    context = {
        "session": session,
        "csrf_field": auth.CSRF_FIELD,
        "open_mode": auth.open_mode(request),
        "refresh_seconds": REFRESH_SECONDS,
        **context,
    }
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    if session.fresh:
        await auth.write_session(request, response, session)
    return response


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def now() -> datetime:
    return datetime.now(UTC)


def safe_next(target: str | None) -> str:
    """Only paths inside the dashboard: no open redirects."""
    if not target or not target.startswith("/admin") or target.startswith("//"):
        return "/admin"
    if "\\" in target or "\n" in target or "\r" in target:
        return "/admin"
    return target


# --- login / logout --------------------------------------------------------------------


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, next: str | None = None) -> HTMLResponse:
    return await render(request, "login.html", {"next": safe_next(next), "error": None})


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, form: Form) -> Response:
    key = str(form.get("api_key") or "")
    target = safe_next(str(form.get("next") or ""))
    throttle = request.app.state.auth_throttle
    address = client_address(request)
    wait = throttle.retry_after(address)
    if wait is not None:  # refused before the key is compared
        seconds = math.ceil(wait)
        page = await render(
            request,
            "login.html",
            {"next": target, "error": f"Too many failed logins: try again in {seconds} s."},
            status_code=429,
        )
        page.headers["Retry-After"] = str(seconds)
        return page
    actor = auth.check_key(request, key)
    if actor is None:
        throttle.failed(address)
        return await render(
            request,
            "login.html",
            {"next": target, "error": "That API key is not valid."},
            status_code=401,
        )
    response = redirect(target)
    await auth.write_session(request, response, auth.new_login(actor))
    return response


@router.post("/logout")
async def logout(_: Session, form: Form) -> Response:
    response = redirect("/admin/login")
    auth.clear_session(response)
    return response


# --- runs (suspended first) ------------------------------------------------------------


@dataclass(slots=True)
class Listing:
    filter: RunFilter
    status_param: str
    meta: str
    cursor: str | None
    errors: list[str] = field(default_factory=list)

    def query(self, **changes: str | None) -> str:
        params: dict[str, str | None] = {
            "status": self.status_param,
            "provider": self.filter.provider,
            "meta": self.meta or None,
            "cursor": self.cursor,
        }
        params.update(changes)
        return urlencode({k: v for k, v in params.items() if v})


def listing(
    status: str | None, provider: str | None, meta: str | None, cursor: str | None
) -> Listing:
    errors = []
    status_value: RunStatus | None = RunStatus.REQUIRES_ACTION
    status_param = RunStatus.REQUIRES_ACTION.value if status is None else status
    if status_param == "any":
        status_value = None
    else:
        try:
            status_value = RunStatus(status_param)
        except ValueError:
            errors.append(f"unknown status {status_param!r}")
            status_param = RunStatus.REQUIRES_ACTION.value
    provider = provider or None
    if provider is not None and provider not in PROVIDERS:
        errors.append(f"unknown provider {provider!r}")
        provider = None
    meta_key = meta_value = None
    meta = (meta or "").strip()
    if meta:
        key, sep, value = meta.partition("=")
        key = key.strip()
        if META_KEY.match(key):
            meta_key, meta_value = key, (value.strip() if sep else None)
        else:
            errors.append("metadata filter: use key=value (key: letters, digits, _ . -)")
            meta = ""
    return Listing(
        RunFilter(status_value, provider, meta_key, meta_value),
        status_param,
        meta,
        cursor or None,
        errors,
    )


async def rows_of(request: Request, page: Listing) -> tuple[list[present.Row], str | None]:
    reads = reads_of(request)
    try:
        records, next_cursor = await reads.runs_page(
            page.filter, limit=PAGE_SIZE, cursor=page.cursor
        )
    except BadCursor as exc:
        page.errors.append(str(exc))
        page.cursor = None
        records, next_cursor = await reads.runs_page(page.filter, limit=PAGE_SIZE, cursor=None)
    pending = await reads.pending_calls(records)
    since = await reads.suspended_since(records)
    t = now()
    rows = []
    for r in records:
        waiting = since.get(r.id, r.updated_at) if r.status == RunStatus.REQUIRES_ACTION else None
        rows.append(
            present.Row(
                r,
                pending.get(r.id, []),
                (t - waiting).total_seconds() if waiting is not None else None,
                (r.expires_at - t).total_seconds()
                if r.expires_at is not None and r.status == RunStatus.REQUIRES_ACTION
                else None,
            )
        )
    return rows, next_cursor


@router.get("", response_class=HTMLResponse)
async def runs_page(
    request: Request,
    session: Session,
    status: str | None = None,
    provider: str | None = None,
    meta: str | None = None,
    cursor: str | None = None,
    done: str | None = None,
) -> HTMLResponse:
    page = listing(status, provider, meta, cursor)
    rows, next_cursor = await rows_of(request, page)
    counts = await reads_of(request).count_by_status()
    return await render(
        request,
        "runs.html",
        {
            "page": page,
            "rows": rows,
            "next_cursor": next_cursor,
            "statuses": [s.value for s in RunStatus],
            "providers": PROVIDERS,
            "counts": counts,
            "now": now(),
            "flash": DONE.get(done or ""),
        },
        session=session,
    )


@router.get("/rows", response_class=HTMLResponse)
async def runs_rows(
    request: Request,
    session: Session,
    status: str | None = None,
    provider: str | None = None,
    meta: str | None = None,
    cursor: str | None = None,
) -> HTMLResponse:
    """The table body alone (and the pager, out of band): what the auto-refresh swaps, so
    the page and its scroll position stay put."""
    page = listing(status, provider, meta, cursor)
    rows, next_cursor = await rows_of(request, page)
    counts = await reads_of(request).count_by_status()
    return await render(
        request,
        "_rows.html",
        {
            "page": page,
            "rows": rows,
            "next_cursor": next_cursor,
            "now": now(),
            "oob": True,
            "counts": counts,
            "statuses": [s.value for s in RunStatus],
        },
        session=session,
    )


# --- run detail ------------------------------------------------------------------------


TIMELINE_EVENTS = 5000


async def continued_by(reads: RunReads, run_id: str, shown: list[Any]) -> list[str]:
    """The runs that continued this one: their `run.continued` events come after its end,
    possibly past the timeline's first `TIMELINE_EVENTS` events."""
    events = list(shown)
    while len(shown) == TIMELINE_EVENTS:
        shown = await reads.events(run_id, after=shown[-1].seq, limit=TIMELINE_EVENTS)
        events.extend(shown)
    return present.continued_by(events)


async def detail_context(request: Request, run_id: str) -> dict[str, Any]:
    reads = reads_of(request)
    view = await service_of(request).get_run(run_id, with_log=True)
    r = view.record
    events = await reads.events(run_id, limit=TIMELINE_EVENTS)
    messages, state_error = present.conversation(r)
    deliveries = await reads.deliveries(run_id)
    ledger = await reads.ledger(run_id)
    since = await reads.suspended_since([r])
    t = now()
    waiting = since.get(r.id, r.updated_at) if r.status == RunStatus.REQUIRES_ACTION else None
    answered = [c for c in view.pending if c.result_hash is not None or c.preresolved]
    open_calls = [c for c in view.pending if c.result_hash is None and not c.preresolved]
    return {
        "view": view,
        "run": r,
        "model": present.Row(view.record, view.pending, None, None).model,
        "reason": present.waiting_reason_text(r.waiting_reason),
        "waiting_for": (t - waiting).total_seconds() if waiting is not None else None,
        "expires_in": (r.expires_at - t).total_seconds()
        if r.expires_at is not None and r.status == RunStatus.REQUIRES_ACTION
        else None,
        "messages": messages,
        "state_error": state_error,
        "conversation_id": conversations.conversation_of(r),
        "previous_run_id": conversations.previous_of(r),
        "continued_by": await continued_by(reads, run_id, events),
        "timeline": present.timeline(events),
        "deliveries": deliveries,
        "open_calls": open_calls,
        "answered_calls": answered,
        "now": t,
        "terminal": r.status in TERMINAL,
        "can_cancel": r.status in sources(Transition.CANCEL),
        "can_retry": r.status in sources(Transition.RETRY),
        "can_extend": r.status == RunStatus.REQUIRES_ACTION,
        "needs_results": bool(open_calls) and r.status == RunStatus.REQUIRES_ACTION,
        "needs_resolution": view.resolution is not None,
        "usage": r.usage or {},
        "ledger": ledger,
        "form": {},
        "form_errors": {},
        "error": None,
        "flash": None,
    }


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(
    request: Request, run_id: str, session: Session, done: str | None = None
) -> HTMLResponse:
    try:
        context = await detail_context(request, run_id)
    except ServiceError as exc:
        return await render(request, "error.html", {"error": exc.detail}, status_code=exc.status)
    context["flash"] = DONE.get(done or "")
    return await render(request, "run.html", context, session=session)


@router.get("/runs/{run_id}/poll")
async def run_poll(request: Request, run_id: str, _: Session, v: int = 0, seq: int = 0) -> Response:
    """204 while nothing changed; otherwise tells htmx to reload the page."""
    record = await reads_of(request).run(run_id)
    if record is None or (record.version, record.last_event_seq) != (v, seq):
        return Response(status_code=200, headers={"HX-Refresh": "true"})
    return Response(status_code=204)


# --- actions ---------------------------------------------------------------------------


@dataclass(slots=True)
class Checked:
    """A validated action form: what the confirmation page shows and carries on."""

    summary: list[tuple[str, str]]
    fields: list[tuple[str, str]]
    errors: dict[str, str]
    payload: Any = None


def check_tool_results(form: FormData, view: RunView) -> Checked:
    open_ids = {c.call_id for c in view.pending if c.result_hash is None and not c.preresolved}
    errors: dict[str, str] = {}
    results = []
    fields: list[tuple[str, str]] = []
    summary: list[tuple[str, str]] = []
    try:
        count = int(str(form.get("count") or "0"))
    except ValueError:
        count = 0
    for i in range(min(count, 1000)):
        call_id = str(form.get(f"call_id_{i}") or "")
        text = str(form.get(f"output_{i}") or "")
        is_error = form.get(f"is_error_{i}") == "on"
        if not text.strip():
            continue
        if call_id not in open_ids:
            errors[f"output_{i}"] = "this tool call is not pending any more"
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            errors[f"output_{i}"] = (
                f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}); "
                'wrap text in double quotes, e.g. "3"'
            )
            continue
        results.append({"tool_call_id": call_id, "output": value, "is_error": is_error})
        fields += [(f"call_id_{i}", call_id), (f"output_{i}", text)]
        if is_error:
            fields.append((f"is_error_{i}", "on"))
        summary.append((call_id, present.preview(value, 200) + (" (error)" if is_error else "")))
    if not results and not errors:
        errors["form"] = "Enter a JSON result for at least one tool call."
    payload = None
    if not errors:
        try:
            payload = ToolResultsIn.model_validate({"results": results})
        except ValidationError as exc:
            errors["form"] = "; ".join(str(e["msg"]) for e in exc.errors())
    fields.append(("count", str(count)))
    return Checked(summary, fields, errors, payload)


def check_resolution(form: FormData) -> Checked:
    data = {
        k: str(form.get(k) or "").strip() or None
        for k in ("action", "feedback", "tool_name", "reason")
    }
    errors: dict[str, str] = {}
    payload = None
    try:
        payload = ResolutionIn.model_validate(data)
    except ValidationError as exc:
        errors["action"] = "; ".join(str(e["msg"]) for e in exc.errors())
    if payload is not None and payload.action == "repair" and not payload.tool_name:
        errors["tool_name"] = "repair needs the name of the tool to call instead"
    fields = [(k, v) for k, v in data.items() if v]
    return Checked([(k, v) for k, v in fields], fields, errors, payload)


def check_extension(form: FormData) -> Checked:
    raw = str(form.get("minutes") or "").strip()
    errors: dict[str, str] = {}
    minutes = 0.0
    try:
        minutes = float(raw)
    except ValueError:
        errors["minutes"] = "enter a number of minutes"
    else:
        if not 0 < minutes * 60 <= operator.MAX_EXTENSION_SECONDS:
            errors["minutes"] = "enter between 1 and 525600 minutes"
    return Checked([("extend by", f"{raw} minutes")], [("minutes", raw)], errors, minutes * 60)


async def action_error(
    request: Request, run_id: str, session: auth.Session, message: str, status: int, **extra: Any
) -> HTMLResponse:
    try:
        context = await detail_context(request, run_id)
    except ServiceError as exc:
        return await render(request, "error.html", {"error": exc.detail}, status_code=exc.status)
    context.update(error=message, **extra)
    return await render(request, "run.html", context, status_code=status, session=session)


@router.post("/runs/{run_id}/{action}", response_class=HTMLResponse)
async def run_action(
    request: Request, run_id: str, action: str, session: Session, form: Form
) -> Response:
    if action not in ACTIONS:
        return await render(request, "error.html", {"error": "unknown action"}, status_code=404)
    service = service_of(request)
    actor = session.actor
    assert actor is not None
    try:
        view = await service.get_run(run_id)
    except ServiceError as exc:
        return await render(request, "error.html", {"error": exc.detail}, status_code=exc.status)
    checked = Checked([], [], {})
    if action == "tool-results":
        checked = check_tool_results(form, view)
    elif action == "resolve":
        checked = check_resolution(form)
    elif action == "extend":
        checked = check_extension(form)
    if checked.errors:
        values = {k: str(v) for k, v in form.items() if k != auth.CSRF_FIELD}
        return await action_error(
            request,
            run_id,
            session,
            "Please correct the form below.",
            422,
            form=values,
            form_errors=checked.errors,
        )
    if form.get("confirmed") != "yes":
        return await render(
            request,
            "confirm.html",
            {
                "run": view.record,
                "action": action,
                "summary": checked.summary,
                "fields": checked.fields,
            },
            session=session,
        )
    try:
        if action == "cancel":
            await service.cancel(run_id, actor=actor)
        elif action == "tool-results":
            outcome = await service.submit_tool_results(checked.payload, run_id=run_id, actor=actor)
            if not outcome.resumed and outcome.accepted:
                await operator.note(
                    service,
                    run_id,
                    "tool_result.submitted_by_operator",
                    {"tool_call_ids": outcome.accepted},
                    actor,
                )
        elif action == "resolve":
            await service.resolve(run_id, checked.payload, actor=actor)
        elif action == "extend":
            await operator.extend_expiry(service, run_id, float(checked.payload), actor)
        elif action == "retry":
            await operator.retry_run(service, run_id, actor)
    except ServiceError as exc:
        return await action_error(request, run_id, session, exc.detail, exc.status)
    return redirect(f"/admin/runs/{run_id}?done={action}")


# --- overview --------------------------------------------------------------------------


@router.get("/overview", response_class=HTMLResponse)
async def overview(request: Request, session: Session) -> HTMLResponse:
    t = now()
    o = await reads_of(request).overview(t)
    per_minute = [(str(i), n) for i, n in enumerate(o.activity.completed_per_minute)]
    return await render(
        request,
        "overview.html",
        {
            "counts": [(s.value, o.counts.get(s.value, 0)) for s in RunStatus],
            "total": sum(o.counts.values()),
            "age_bars": present.bars(o.age_histogram),
            "oldest": max(o.suspended_ages) if o.suspended_ages else None,
            "activity": o.activity,
            "minute_bars": present.bars(per_minute, width=480, height=80),
            "now": t,
        },
        session=session,
    )


def _record_link(record: RunRecord) -> str:
    return f"/admin/runs/{record.id}"


templates.env.globals["run_link"] = _record_link
