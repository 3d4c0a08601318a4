"""The dashboard's pages: the runs (suspended first) with their filters and the table
body the auto-refresh swaps, and a run's detail and its change poll (the overview is
`app.dashboard.overview`'s)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.core.lifecycle import TERMINAL, RunStatus, Transition, sources
from app.core.scope import Scope
from app.dashboard import actions, auth, present, trees
from app.dashboard.actions.approvals import awaiting
from app.dashboard.search import Listing, listing
from app.dashboard.web import (
    ALL_TENANTS,
    Session,
    Viewed,
    Viewing,
    acts_on,
    agents_of,
    error_page,
    forks_of,
    now,
    reading_scope,
    reads_of,
    redirect,
    render,
    service_of,
    tenants_of,
)
from app.providers import profiles
from app.service import lineage
from app.service.errors import ServiceError
from app.service.principals import Permission
from app.service.reads import RunReads
from app.service.types import BadCursor

router = APIRouter(prefix="/admin", include_in_schema=False)

PAGE_SIZE = 25
FLASH = {**actions.DONE, "login": "Logged in."}


# --- runs (suspended first) ------------------------------------------------------------


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
    prompts = await reads.prompts(records)
    t = now(request)
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
                prompt=prompts.get(r.id),
            )
        )
    return rows, next_cursor


async def agent_known(request: Request, page: Listing) -> None:
    """Says on the page when the agent searched for is none of the viewed tenant's (its
    runs are still listed: those of a deleted agent keep its name)."""
    f = page.filter
    if f.agent is None or f.scope.only is None:
        return
    try:
        await agents_of(request).get(f.agent, f.agent_version, tenant=f.scope.only)
    except ServiceError:
        known = f"no agent {page.agent!r} in this tenant (only a deleted one's runs match)"
        page.errors.append(known)


async def listing_context(
    request: Request,
    status: str | None,
    provider: str | None,
    meta: str | None,
    cursor: str | None,
    run_id: str | None = None,
    agent: str | None = None,
    *,
    seen: Viewing,
) -> dict[str, Any]:
    """What the runs page and its auto-refreshed rows both show."""
    page = listing(seen, status, provider, meta, cursor, run_id, agent)
    await agent_known(request, page)
    rows, next_cursor = await rows_of(request, page)
    return {
        "page": page,
        "rows": rows,
        "next_cursor": next_cursor,
        "statuses": [s.value for s in RunStatus],
        "counts": await reads_of(request).count_by_status(seen.scope),
        "now": now(request),
        "own": seen.own,
    }


@router.get("", response_class=HTMLResponse)
async def runs_page(
    request: Request,
    session: Session,
    view: Viewed,
    status: str | None = None,
    provider: str | None = None,
    meta: str | None = None,
    cursor: str | None = None,
    done: str | None = None,
    id: str | None = None,  # (the form field)
    agent: str | None = None,
) -> Response:
    context = await listing_context(request, status, provider, meta, cursor, id, agent, seen=view)
    page: Listing = context["page"]
    whole = page.whole_id
    if whole is not None:  # a whole id: straight to its run, if it is one of those viewed
        if await reads_of(request).run(whole, page.filter.scope) is not None:
            return redirect(f"/admin/runs/{whole}")
        page.errors.append(f"no run {whole} among the runs viewed")
    tenants = [t.id for t in await tenants_of(request).list()] if page.viewing.wide else []
    if page.viewing.wide and page.viewing.tenant not in (ALL_TENANTS, *tenants):
        page.errors.append(f"no tenant {page.viewing.tenant!r}: it has no runs")
    context.update(
        providers=profiles.active().names(), flash=FLASH.get(done or ""), tenants=tenants
    )
    return await render(request, "runs.html", context, session=session)


@router.get("/rows", response_class=HTMLResponse)
async def runs_rows(
    request: Request,
    session: Session,
    view: Viewed,
    status: str | None = None,
    provider: str | None = None,
    meta: str | None = None,
    cursor: str | None = None,
    id: str | None = None,  # (the form field)
    agent: str | None = None,
) -> HTMLResponse:
    """The table body alone (and the pager, out of band): what the auto-refresh swaps, so
    the page and its scroll position stay put."""
    context = await listing_context(request, status, provider, meta, cursor, id, agent, seen=view)
    context.update(oob=True)
    return await render(request, "_rows.html", context, session=session)


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


async def checkpoints_of(request: Request, run_id: str, scope: Scope) -> dict[int, Any]:
    """The run's checkpoints by `seq` (where its page offers "Fork from here"); none when
    its state cannot be read."""
    try:
        listed = await forks_of(request).checkpoints(run_id, scope=scope)
    except ServiceError:
        return {}
    return {c.seq: c for c in listed.data}


#: The forks a run's page lists (the rest: `GET /v1/runs/{id}/forks`).
FORKS_SHOWN = 20


async def forks_made(request: Request, run_id: str, scope: Scope) -> tuple[list[Any], bool]:
    """The first forks of the run (oldest first), and whether there are more."""
    views, more = await forks_of(request).forks(run_id, limit=FORKS_SHOWN, cursor=None, scope=scope)
    return [(v.record, lineage.forked_from(v.record)) for v in views], more is not None


async def detail_context(request: Request, run_id: str) -> dict[str, Any]:
    """Everything run.html shows; the action route renders it too, with its errors. A
    deployment's admin reads any tenant's run (their lists link to them), and is offered
    no action on another tenant's (`allowed` empty: its action routes refuse them)."""
    reads = reads_of(request)
    session = await auth.load_session(request)
    scope = await reading_scope(request)
    view = await service_of(request).get_run(run_id, with_log=True, scope=scope)
    r = view.record
    ours = await acts_on(request, r)
    events = await reads.events(run_id, limit=TIMELINE_EVENTS)
    try:
        messages, state_error = present.conversation(r, await reads.run_of(r)), None
    except Exception as exc:  # a state this version cannot read is shown, not fatal
        messages, state_error = [], f"{type(exc).__name__}: {exc}"
    deliveries = await reads.deliveries(run_id)
    ledger = await reads.ledger(run_id)
    since = await reads.suspended_since([r])
    t = now(request)
    waiting = since.get(r.id, r.updated_at) if r.status == RunStatus.REQUIRES_ACTION else None
    place = lineage.tree_of(r)
    forks = ours and state_error is None and session.can(Permission.RUNS_CREATE)
    answered = [c for c in view.pending if c.result_hash is not None or c.preresolved]
    open_calls = [
        c
        for c in view.pending
        if c.result_hash is None and not c.preresolved and not c.awaits_approval
    ]
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
        "conversation_id": lineage.conversation_of(r),
        "previous_run_id": lineage.previous_of(r),
        "continued_by": await continued_by(reads, run_id, events),
        "agent": present.agent_label(r),
        "schedule": present.schedule_mark(r),
        "origin": present.origin_label(r),
        "forked_from": lineage.forked_from(r),
        "forks": await forks_made(request, run_id, scope),
        "checkpoints": await checkpoints_of(request, run_id, scope) if forks else {},
        "checkpoint_kinds": present.CHECKPOINT_KINDS,
        "place": place,
        "tree": await trees.tree_of(service_of(request), r, scope) if lineage.in_tree(r) else None,
        # A callback URL answers the run's calls: shown only to who may submit results.
        "timeline": present.timeline(
            events, callbacks=ours and session.can(Permission.TOOL_RESULTS_SUBMIT)
        ),
        "deliveries": deliveries,
        "open_calls": open_calls,
        "approvals": present.pending_of(awaiting(view), t)
        if r.status == RunStatus.REQUIRES_ACTION
        else [],
        "answered_calls": answered,
        "now": t,
        "terminal": r.status in TERMINAL,
        "can_cancel": r.status in sources(Transition.CANCEL),
        "can_retry": r.status in sources(Transition.RETRY),
        "can_extend": r.status == RunStatus.REQUIRES_ACTION,
        "can_raise_limits": r.status not in TERMINAL,
        "budget": (r.waiting_reason or {})
        if r.status == RunStatus.REQUIRES_ACTION
        and (r.waiting_reason or {}).get("type") == "budget"
        else None,
        "needs_results": bool(open_calls) and r.status == RunStatus.REQUIRES_ACTION,
        "needs_resolution": view.resolution is not None,
        "usage": r.usage or {},
        "ledger": ledger,
        "form": {},
        "form_errors": {},
        "error": None,
        "flash": None,
        # Another tenant's run (to a deployment's admin): read-only, whatever the role.
        "foreign": None if ours else r.tenant_id,
        **({} if ours else {"allowed": set()}),
    }


@router.get("/runs/{run_id}", response_class=HTMLResponse)
async def run_page(
    request: Request, run_id: str, session: Session, done: str | None = None
) -> HTMLResponse:
    try:
        context = await detail_context(request, run_id)
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    context["flash"] = FLASH.get(done or "")
    return await render(request, "run.html", context, session=session)


@router.get("/runs/{run_id}/poll")
async def run_poll(request: Request, run_id: str, _: Session, v: int = 0, seq: int = 0) -> Response:
    """204 while nothing changed; otherwise tells htmx to reload the page."""
    record = await reads_of(request).run(run_id, await reading_scope(request))
    if record is None or (record.version, record.last_event_seq) != (v, seq):
        return Response(status_code=200, headers={"HX-Refresh": "true"})
    return Response(status_code=204)
