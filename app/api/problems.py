"""RFC 9457 problem details: every refusal is `application/problem+json` with a stable
`type` (a URI under /problems/, each documented there) and a human `detail`."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from app.service.errors import ServiceError
from app.service.jsonrules import MAX_DEPTH

MEDIA_TYPE = "application/problem+json"

#: code -> (status, title, what it means). The `type` of each problem is /problems/<code>.
CATALOGUE: dict[str, tuple[int, str, str]] = {
    "malformed-json": (400, "Malformed JSON", "The request body is not valid JSON."),
    "unauthorized": (
        401,
        "Unauthorized",
        "A valid `Authorization: Bearer <key>` header is required.",
    ),
    "browser-token-invalid": (
        401,
        "Browser token invalid or expired",
        "The browser token (`Authorization: Bearer arb_…` or `?access_token=`) has expired, "
        "was altered, or was not made by this service; `?access_token=` takes browser "
        "tokens only. Mint a new one: `POST /v1/runs/{run_id}/browser-tokens`.",
    ),
    "forbidden": (
        403,
        "Permission missing",
        "The key (or account, or token) is valid but its role does not hold the "
        "permission this operation needs; `permission` names it, `role` is the caller's.",
    ),
    "not-found": (404, "Not found", "No such resource."),
    "method-not-allowed": (405, "Method not allowed", "The resource does not accept it."),
    "run-not-found": (404, "Run not found", "No run has this id."),
    "callback-token-invalid": (
        404,
        "Callback token unknown or no longer valid",
        "Callback tokens work for one suspension of one run and stop working when the run "
        "leaves requires_action.",
    ),
    "key-not-found": (
        404,
        "API key not found",
        "No key of the caller's tenant has this id (or it is revoked or expired, for a rotation).",
    ),
    "tenant-not-found": (404, "Tenant not found", "No tenant has this id."),
    "agent-not-found": (
        404,
        "Agent not found",
        "The caller's tenant has no agent of this name (or version), or it was deleted.",
    ),
    "agent-exists": (
        409,
        "An agent with this name exists",
        "Agent names are unique in a tenant: `PUT /v1/agents/{name}` makes its next version.",
    ),
    "schedule-not-found": (
        404,
        "Schedule not found",
        "The caller's tenant has no schedule of this key (or it was deleted).",
    ),
    "schedule-busy": (
        409,
        "The schedule kept changing",
        "Workers fired the schedule throughout the change's attempts; send it again.",
    ),
    "schedule-exists": (
        409,
        "A schedule with this key exists",
        "Schedule keys are unique in a tenant: `PATCH /v1/schedules/{key}` changes it.",
    ),
    "tenant-exists": (409, "A tenant with this id exists", "Tenant ids are unique."),
    "run-state-conflict": (
        409,
        "Run is not in a state that allows this",
        "Another change won the race or the run is in the wrong status; `current_status` "
        "names the status it is in (a busy conversation: `active_run_id` names its active "
        "run; a run that is not its conversation's latest: `latest_run_id` names that).",
    ),
    "tool-result-conflict": (
        409,
        "A different result was already submitted for this tool call",
        "Each pending call is answered exactly once; identical re-sends are accepted.",
    ),
    "approval-stale": (
        409,
        "The decision was made on other arguments",
        "The decision's `arguments_hash` is not the hash of the call's arguments: read the "
        "run's approvals again and decide on what they are now.",
    ),
    "fork-split": (
        409,
        "The fork would split a tool call from its result",
        "A fork's conversation may end with the model's tool calls (the fork waits for them), "
        "never leave one without its result before that: pick another checkpoint "
        "(`GET /v1/runs/{id}/checkpoints`), or answer the calls (`patch.tool_results`).",
    ),
    "approval-conflict": (
        409,
        "A different decision was already made for this tool call",
        "Each gated call is decided once; the same decision again is accepted (nothing changes).",
    ),
    "idempotency-in-flight": (
        409,
        "A request with this idempotency key is still being processed",
        "Retry after the first request has finished.",
    ),
    "lease-not-found": (
        404,
        "No such lease",
        "This queue never issued the lease token (or it is malformed, or its run is gone).",
    ),
    "tool-call-lease-lost": (
        409,
        "The tool call's lease was lost",
        "The lease moved on: the call was leased again after this lease lapsed, or it was "
        "answered, or its run stopped waiting. Drop the call: whoever holds it now answers.",
    ),
    "payload-too-large": (
        413,
        "Request body too large",
        "The body exceeds AGENTRUN_MAX_BODY_BYTES and was refused before parsing.",
    ),
    "unsupported-media-type": (
        415,
        "Unsupported media type",
        "Send `Content-Type: application/json`.",
    ),
    "validation-error": (422, "Invalid request", "The body does not match the schema."),
    "invalid-request": (422, "Invalid request", "The request is well-formed but refused."),
    "idempotency-key-reused": (
        422,
        "Idempotency key reused with a different request",
        "An Idempotency-Key identifies one request body.",
    ),
    "tool-call-not-pending": (
        422,
        "Tool call is not pending",
        "The id names no pending tool call of this run (for a decision: no gated call of "
        "its current round; a call awaiting approval takes no result until approved).",
    ),
    "too-many-failed-authentications": (
        429,
        "Too many failed authentications",
        "This client address failed to authenticate too often (AGENTRUN_AUTH_FAILURE_LIMIT "
        "within AGENTRUN_AUTH_FAILURE_WINDOW seconds); retry after `Retry-After` seconds.",
    ),
    "service-unavailable": (503, "Service unavailable", "The database is not reachable."),
}


#: Pydantic error types of rules between fields (`app.providers.params`, `app.service.schemas`).
CROSS_FIELD_ERRORS = frozenset({"parameter_conflict", "cross_field"})


class Problem(BaseModel):
    """RFC 9457 problem details."""

    model_config = ConfigDict(extra="allow")
    type: str
    title: str
    status: int
    detail: str
    instance: str | None = None


def problem(
    code: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> JSONResponse:
    status, title, _ = CATALOGUE[code]
    body: dict[str, Any] = {
        "type": f"/problems/{code}",
        "title": title,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body.update(extra)
    if status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": "Bearer"}
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI documentation of the problem responses a route can give."""
    out: dict[int | str, dict[str, Any]] = {}
    for status in statuses:
        codes = [c for c, (s, _, _) in CATALOGUE.items() if s == status]
        out[status] = {
            "model": Problem,
            "description": "; ".join(CATALOGUE[c][1] for c in codes) or "Problem",
            "content": {MEDIA_TYPE: {"schema": {"$ref": "#/components/schemas/Problem"}}},
        }
    return out


def _error(e: Any) -> dict[str, Any]:
    """A pydantic error as a problem's `errors` item; the JSON rule's errors point at the
    offending value itself (`app.service.jsonrules`)."""
    ctx = e.get("ctx") or {}
    if e.get("type") == "json_value" and "loc" in ctx:
        loc = [*list(e.get("loc", ()))[:1], *ctx["loc"]]
        return {"loc": loc, "msg": ctx["problem"], "type": "json_value"}
    return {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette names only the first
    matching route's, and `/v1/runs` has a GET and a POST route)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    if "GET" in methods:
        methods.add("HEAD")
    return ", ".join(sorted(methods))


def install(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> JSONResponse:
        return problem(
            exc.code, exc.detail, instance=request.url.path, headers=exc.headers(), **exc.extra
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return problem(
                "malformed-json",
                "the request body is not valid JSON",
                instance=request.url.path,
            )
        clean = [_error(e) for e in errors]
        first = clean[0] if clean else {"loc": [], "msg": "invalid"}
        where = ".".join(str(p) for p in first["loc"][1:]) or "body"
        # A rule between fields (which JSON Schema cannot state) is not a schema violation.
        between = clean and all(e["type"] in CROSS_FIELD_ERRORS for e in clean)
        return problem(
            "invalid-request" if between else "validation-error",
            f"{where}: {first['msg']}",
            instance=request.url.path,
            errors=clean,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and isinstance(exc.__cause__, RecursionError):
            # FastAPI's JSON parser ran out of stack: nested far beyond the documented limit.
            msg = f"is nested deeper than {MAX_DEPTH} levels"
            return problem(
                "validation-error",
                f"body: {msg}",
                instance=request.url.path,
                errors=[{"loc": ["body"], "msg": msg, "type": "json_value"}],
            )
        if exc.status_code == 400 and isinstance(exc.__cause__, ValueError):
            # FastAPI's JSON parser refused it past json.JSONDecodeError: bytes that are
            # not UTF-8, an integer longer than int()'s digit limit.
            return problem(
                "malformed-json",
                "the request body is not valid JSON",
                instance=request.url.path,
            )
        code = {
            401: "unauthorized",
            404: "not-found",
            405: "method-not-allowed",
            413: "payload-too-large",
            415: "unsupported-media-type",
        }.get(exc.status_code)
        if code is None:
            return JSONResponse(
                {
                    "type": "about:blank",
                    "title": str(exc.detail),
                    "status": exc.status_code,
                    "detail": str(exc.detail),
                },
                status_code=exc.status_code,
                media_type=MEDIA_TYPE,
                headers=exc.headers,
            )
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request)
        return problem(code, str(exc.detail), instance=request.url.path, headers=headers)
