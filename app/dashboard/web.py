"""What every dashboard page shares: the templates, the session and CSRF dependencies,
rendering with the security headers, and the service handles on the app."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData
from starlette.types import Receive, Scope, Send

from app.agents.service import AgentService
from app.approvals.service import ApprovalService
from app.clock import Clock
from app.core.scope import Scope as TenantScope  # (not starlette's ASGI `Scope`)
from app.dashboard import actions, auth, present
from app.forks.service import ForkService
from app.limits.run_limits import RunLimitsService
from app.schedules.service import ScheduleService
from app.service.principals import Permission
from app.service.reads import RunReads
from app.service.runs import RunService
from app.service.types import RunRecord
from app.tenancy.access import TENANT_PATTERN
from app.tenancy.tenants import Tenants

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=str(HERE / "templates"))
templates.env.filters["duration"] = present.duration
templates.env.filters["ts"] = present.timestamp
templates.env.filters["zoned"] = present.zoned
templates.env.filters["preview"] = present.preview
templates.env.filters["json"] = present.to_json

REFRESH_SECONDS = 3
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _record_link(record: RunRecord) -> str:
    return f"/admin/runs/{record.id}"


def agent_link(ref: str) -> str:
    """The page of the agent `ref` (`name` or `name@version`) names, at that version."""
    name, _, version = ref.partition("@")
    return f"/admin/agents/{name}" + (f"#v{version}" if version else "")


templates.env.globals["run_link"] = _record_link
templates.env.globals["agent_link"] = agent_link


async def logged_in(request: Request) -> auth.Session:
    """The signed-in session, which may read its tenant's runs (every page shows them)."""
    principal = await auth.dashboard_principal(request)
    if not principal.can(Permission.RUNS_READ):
        raise auth.PermissionRefused(Permission.RUNS_READ, principal)
    return await auth.load_session(request)


def requiring(permission: Permission) -> Callable[[Request], Awaitable[auth.Session]]:
    """A page dependency: the signed-in session, whose role must hold `permission` (403
    page otherwise), e.g. `Annotated[auth.Session, Depends(requiring(P.KEYS_MANAGE))]`."""

    async def dependency(request: Request) -> auth.Session:
        session = await logged_in(request)
        if session.principal is not None and not session.can(permission):
            raise auth.PermissionRefused(permission, session.principal)
        return session

    return dependency


async def checked_form(request: Request) -> FormData:
    """The POSTed form, refused (403, nothing changed) without the session's CSRF token."""
    session = await auth.load_session(request)
    form = await request.form()
    if not auth.csrf_ok(session, form.get(auth.CSRF_FIELD)):
        raise auth.CsrfRefused()
    return form


Session = Annotated[auth.Session, Depends(logged_in)]
Form = Annotated[FormData, Depends(checked_form)]


async def tenant_of(request: Request) -> str:
    """The signed-in principal's tenant: the only runs its pages show and act on."""
    return (await auth.dashboard_principal(request)).tenant


async def scope_of(request: Request) -> TenantScope:
    """The signed-in principal's scope (its tenant's: never ALL)."""
    return (await auth.dashboard_principal(request)).scope


#: The `tenant` parameter that shows every tenant's runs (to a deployment's admins).
ALL_TENANTS = "*"


@dataclass(frozen=True, slots=True)
class Viewing:
    """Whose runs a list page reads. Everyone reads their own tenant's; a deployment's
    admins (who hold `tenants:manage`) may name another tenant or every tenant (`*`) with
    the page's `tenant` parameter, read-only: actions stay within their own tenant, as
    the API's do. `wide`: the session may choose (the pages show a tenant column)."""

    scope: TenantScope
    tenant: str  # the choice: the principal's tenant, another's id, or ALL_TENANTS
    own: str  # the principal's tenant
    wide: bool
    error: str | None = None

    @property
    def param(self) -> dict[str, str]:
        """The query parameter that keeps this choice in a page's links (none: own)."""
        return {"tenant": self.tenant} if self.tenant != self.own else {}


async def viewing(request: Request, tenant: str = "") -> Viewing:
    """The tenants a list page reads, from its `tenant` parameter (see `Viewing`; '':
    the principal's own). A page's dependency (`Viewed`) or a form's reading."""
    principal = await auth.dashboard_principal(request)
    wide = principal.can(Permission.TENANTS_MANAGE)
    own = Viewing(principal.scope, principal.tenant, principal.tenant, wide)
    tenant = tenant.strip()
    if not tenant or tenant == principal.tenant:
        return own
    if not wide:
        refused = "Only a deployment's admins see other tenants' runs: these are your tenant's."
        return Viewing(principal.scope, principal.tenant, principal.tenant, False, refused)
    if tenant == ALL_TENANTS:
        return Viewing(TenantScope.ALL, ALL_TENANTS, principal.tenant, True)
    if not re.fullmatch(TENANT_PATTERN, tenant):
        refused = f"no tenant can be named {tenant!r}"
        return Viewing(principal.scope, principal.tenant, principal.tenant, True, refused)
    return Viewing(TenantScope.of(tenant), tenant, principal.tenant, True)


Viewed = Annotated[Viewing, Depends(viewing)]


async def reading_scope(request: Request) -> TenantScope:
    """What a run's own page may read: every tenant's for a deployment's admins (whose
    lists link to them), else the principal's tenant."""
    principal = await auth.dashboard_principal(request)
    return TenantScope.ALL if principal.can(Permission.TENANTS_MANAGE) else principal.scope


async def acts_on(request: Request, record: RunRecord) -> bool:
    """Whether the signed-in principal may act on `record` at all: its own tenant's only
    (a deployment's admin reads another tenant's run, and acts on none)."""
    return record.tenant_id == (await auth.dashboard_principal(request)).tenant


def service_of(request: Request) -> RunService:
    service: RunService = request.app.state.service
    return service


def approvals_of(request: Request) -> ApprovalService:
    approvals: ApprovalService = request.app.state.approvals
    return approvals


def agents_of(request: Request) -> AgentService:
    agents: AgentService = request.app.state.agents
    return agents


def schedules_of(request: Request) -> ScheduleService:
    schedules: ScheduleService = request.app.state.schedules
    return schedules


def forks_of(request: Request) -> ForkService:
    forks: ForkService = request.app.state.forks
    return forks


def run_limits_of(request: Request) -> RunLimitsService:
    limits: RunLimitsService = request.app.state.run_limits
    return limits


def tenants_of(request: Request) -> Tenants:
    tenants: Tenants = request.app.state.tenants
    return tenants


def reads_of(request: Request) -> RunReads:
    reads: RunReads = request.app.state.reads
    return reads


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
        "open_mode": await auth.open_mode(request),
        # The actions this session may take (run.html shows only their forms).
        "allowed": {name for name, p in actions.PERMISSIONS.items() if session.can(p)},
        "refresh_seconds": REFRESH_SECONDS,
        **context,
    }
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    response.headers.update(SECURITY_HEADERS)
    if session.fresh:
        await auth.write_session(request, response, session)
    return response


async def error_page(request: Request, message: str, status_code: int) -> HTMLResponse:
    """The plain error page (unknown run, unknown action, ...)."""
    return await render(request, "error.html", {"error": message}, status_code=status_code)


async def too_large(scope: Scope, receive: Receive, send: Send) -> None:
    """The page for a form over AGENTRUN_MAX_BODY_BYTES: the API's body limit
    (app.api.security.BodyLimit) refuses it before any route reads it, and answers
    under /admin with this instead of its JSON problem."""
    request = Request(scope, receive)
    limit = request.app.state.settings.max_body_bytes
    message = f"The form is larger than the {limit} bytes this server accepts. Nothing was changed."
    response = await error_page(request, message, 413)
    await response(scope, receive, send)


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303)


def now(request: Request) -> datetime:
    """The app's clock (`app.state.clock`, the composition root's)."""
    clock: Clock = request.app.state.clock
    return clock.now()
