"""Logging in with an API key (throttled per address, like the API's bearer keys) and
logging out."""

from __future__ import annotations

import math

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from app.dashboard import auth
from app.dashboard.web import Form, Session, redirect, render

router = APIRouter(prefix="/admin", include_in_schema=False)


def client_address(request: Request) -> str:
    """The address failed logins are throttled by: what uvicorn reports, as for the API's
    bearer keys (the throttle, `app.state.auth_throttle`, is the API's and shared)."""
    return request.client.host if request.client else "unknown"


def safe_next(target: str | None) -> str:
    """Only paths inside the dashboard: no open redirects."""
    if not target or not target.startswith("/admin") or target.startswith("//"):
        return "/admin"
    if "\\" in target or "\n" in target or "\r" in target:
        return "/admin"
    return target


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
    actor = await auth.check_key(request, key)
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
