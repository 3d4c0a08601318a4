"""Logging in as a person (username and password) or with an API key, both throttled
per address like the API's bearer keys, and logging out."""

from __future__ import annotations

import math
from typing import Any

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


async def with_key_login(request: Request, context: dict[str, Any]) -> dict[str, Any]:
    """The login page offers the API-key form where a key can log in: open mode, or keys
    in AGENTRUN_API_KEYS (keys kept in the database are for programs, not people)."""
    key_login = bool(auth.env_keys(request)) or await auth.open_mode(request)
    return {**context, "key_login": key_login}


@router.get("/login", response_class=HTMLResponse)
async def login_page(request: Request, next: str | None = None) -> HTMLResponse:
    context = {"next": safe_next(next), "error": None, "username": ""}
    return await render(request, "login.html", await with_key_login(request, context))


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, form: Form) -> Response:
    """A person's username and password (the form's first part), or an API key."""
    target = safe_next(str(form.get("next") or ""))
    throttle = request.app.state.auth_throttle
    address = client_address(request)
    wait = throttle.retry_after(address)
    if wait is not None:  # refused before anything is compared
        seconds = math.ceil(wait)
        page = await render(
            request,
            "login.html",
            await with_key_login(
                request,
                {
                    "next": target,
                    "error": f"Too many failed logins: try again in {seconds} s.",
                    "username": "",
                },
            ),
            status_code=429,
        )
        page.headers["Retry-After"] = str(seconds)
        return page
    field = form.get("username")
    username = field if isinstance(field, str) else ""
    if username.strip():
        password = form.get("password")
        password = password if isinstance(password, str) else ""
        session = await auth.check_person(request, username, password)
        error = "That username and password do not match an active account."
    else:
        principal = await auth.check_key(request, str(form.get("api_key") or ""))
        session = None if principal is None else auth.new_login(principal)
        error = "That API key is not valid."
    if session is None:
        throttle.failed(address)
        context = {"next": target, "error": error, "username": username}
        context = await with_key_login(request, context)
        return await render(request, "login.html", context, status_code=401)
    before = await auth.load_session(request)
    if before.secret is not None:  # signing in again ends the session signed in before
        await auth.operators_of(request).sign_out(before.secret)
    response = redirect(target)
    await auth.write_session(request, response, session)
    return response


@router.post("/logout")
async def logout(request: Request, session: Session, form: Form) -> Response:
    """Ends the session: a person's is revoked in the database, not only forgotten."""
    response = redirect("/admin/login")
    await auth.end_session(request, response, session)
    return response
