"""The admin dashboard at /admin: server-rendered pages (Jinja2) with htmx, vendored.

`web` holds what the pages share; `login` the login flow; `pages` the runs and a run;
`overview` what it costs and whether it is healthy (`charts` draws it); `actions` the
operator's actions as typed values and `perform` their one route; `inbox` the approvals
waiting for a decision across runs, with their runs' context, and `bulk` several of them
decided at once; `keys` the tenant's API keys; `agents` the tenant's named agents and
`trees` a run's tree of child runs, on its page;
`schedules` the tenant's schedules, their ticks, and their pause, resume and trigger.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from app.dashboard import (
    agents,
    auth,
    bulk,
    inbox,
    keys,
    login,
    overview,
    pages,
    perform,
    schedules,
)
from app.dashboard.web import error_page, templates, too_large

STATIC_DIR = Path(__file__).resolve().parent / "static"

router = APIRouter()
for part in (
    login.router,
    pages.router,
    overview.router,
    inbox.router,
    bulk.router,
    perform.router,
    keys.router,
    agents.router,
    schedules.router,
):
    router.include_router(part)

__all__ = ["STATIC_DIR", "install", "router", "too_large"]


def install(app: FastAPI) -> None:
    """Mount the dashboard: its routes, its static files, and the answers to a missing
    login (303 to the login page), a refused CSRF token (403) and a role without the
    permission a page or action needs (403)."""
    app.include_router(router)
    app.mount("/admin/static", StaticFiles(directory=STATIC_DIR), name="admin-static")

    @app.exception_handler(auth.LoginRequired)
    async def login_required(request: Request, exc: auth.LoginRequired) -> Response:
        location = "/admin/login"
        if exc.next_path not in ("/admin", "/admin/login") and request.method == "GET":
            location += "?" + urlencode({"next": exc.next_path})
        if request.headers.get("hx-request") == "true":
            # htmx follows a 303 inside the XHR; tell it to navigate instead.
            return Response(status_code=401, headers={"HX-Redirect": location})
        return RedirectResponse(location, status_code=303)

    @app.exception_handler(auth.PermissionRefused)
    async def permission_refused(request: Request, exc: auth.PermissionRefused) -> HTMLResponse:
        message = (
            f"Your role ({exc.principal.role}) does not hold the permission "
            f"{exc.permission.value} this needs. Nothing was changed."
        )
        return await error_page(request, message, 403)

    @app.exception_handler(auth.CsrfRefused)
    async def csrf_refused(request: Request, exc: auth.CsrfRefused) -> HTMLResponse:
        return templates.TemplateResponse(
            request,
            "error.html",
            {
                "error": "The form's security token is missing or wrong (CSRF). "
                "Nothing was changed. Reload the page and try again.",
                "session": None,
            },
            status_code=403,
        )
