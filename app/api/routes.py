"""The /v1 routes: a thin layer over `app.service.runs.RunService` (and its reads,
`app.service.reads.RunReads`)."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Path, Query, Request, Response
from pydantic import BaseModel
from sse_starlette import EventSourceResponse

from app.api import models
from app.api.live import (
    ClientGone,
    server_sent_events,
    tree_events,
    wait_while_connected,
)
from app.api.problems import responses
from app.api.security import authorize
from app.core.lifecycle import RunStatus
from app.service.errors import IdempotencyInFlight, InvalidRequest, RunNotFound
from app.service.live import FINAL, SETTLED, EventHub
from app.service.principals import Permission, Principal, sees_callbacks
from app.service.reads import RunReads
from app.service.runs import RunService, RunView
from app.service.schemas import ResolutionIn, RunCreate, ToolResultsIn
from app.service.types import SubmitOutcome

#: The reference of the API's bodies, events and webhooks (in the repository).
REFERENCE = "docs/reference.md"

router = APIRouter(prefix="/v1", tags=["runs"])
callbacks = APIRouter(prefix="/v1/callbacks", tags=["callbacks"])

# The authenticated caller of a route, who must hold the permission named.
Creator = Annotated[Principal, Depends(authorize(Permission.RUNS_CREATE))]
Reader = Annotated[Principal, Depends(authorize(Permission.RUNS_READ))]
Submitter = Annotated[Principal, Depends(authorize(Permission.TOOL_RESULTS_SUBMIT))]
Resolver = Annotated[Principal, Depends(authorize(Permission.RUNS_RESOLVE))]
Canceller = Annotated[Principal, Depends(authorize(Permission.RUNS_CANCEL))]
Operator = Annotated[Principal, Depends(authorize(Permission.RUNS_OPERATE))]
UsageReader = Annotated[Principal, Depends(authorize(Permission.USAGE_READ))]
Worker = Annotated[Principal, Depends(authorize(Permission.QUEUES_WORK))]
# A reader of one run who may also be a browser token for it (`app.tenancy.browser_routes`).
RunReader = Annotated[Principal, Depends(authorize(Permission.RUNS_READ, browser=True))]
RunId = Annotated[
    str, Path(min_length=1, max_length=40, pattern=r"^[A-Za-z0-9_-]+$", description="a run id")
]
#: RFC 3339 with a time zone (`Z` or an offset); parsed, not coerced from numbers.
TIMESTAMP = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|z|[+-]\d{2}:\d{2})$"
AUTH = responses(401)
#: A create's `Idempotency-Key` header (per tenant).
IdempotencyKey = Annotated[
    str | None, Header(min_length=1, max_length=255, pattern=r"^[\x21-\x7e]+$")
]
#: A page's cursor: the `next_cursor` of the one before.
PageCursor = Annotated[
    str | None,
    Query(
        max_length=200,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="`next_cursor` of the previous page (opaque); a cursor this service "
        "did not make is refused with 422 `invalid-request`",
    ),
]

#: A tree's position in its events (`app.service.tree_live`): each run's `seq`, encoded.
TREE_CURSOR_LENGTH = 16_384
TreeCursor = Annotated[
    str | None,
    Query(
        max_length=TREE_CURSOR_LENGTH,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="with `tree=true`: the `next_cursor` of the previous page, or a "
        "streamed event's `id` (opaque)",
    ),
]
#: A run's `Last-Event-ID`: an event's `seq`.
SEQ = re.compile(r"[0-9]{1,10}")


async def service_of(request: Request) -> RunService:
    # async: FastAPI runs a plain `def` dependency in a thread pool, on every request.
    service: RunService = request.app.state.service
    return service


async def reads_of(request: Request) -> RunReads:
    reads: RunReads = request.app.state.reads
    return reads


Service = Annotated[RunService, Depends(service_of)]
Reads = Annotated[RunReads, Depends(reads_of)]


def json_body(
    model: BaseModel, status_code: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """The response, serialized once by pydantic. (Returned as a model, FastAPI would
    validate our own object against `response_model` again first: measurable CPU on the
    hot routes. `response_model` stays on the route for the OpenAPI document.)"""
    return Response(
        model.model_dump_json(by_alias=True),
        status_code=status_code,
        headers=headers,
        media_type="application/json",
    )


async def results_out(service: RunService, outcome: SubmitOutcome) -> Response:
    view = await service.view(outcome.record)
    return json_body(
        models.ToolResultsOut(
            run=models.RunOut.of(view), accepted=outcome.accepted, resumed=outcome.resumed
        )
    )


@router.post(
    "/runs",
    status_code=201,
    response_model=models.RunOut,
    responses={
        200: {"model": models.RunOut, "description": "Idempotent replay: the run already made"},
        **AUTH,
        **responses(400, 404, 409, 413, 422),
    },
    summary="Create a run (or continue a completed one: `previous_run_id`)",
    description=f"Every field and what it does: `{REFERENCE}#creating-a-run`.",
)
async def create_run(
    body: RunCreate,
    request: Request,
    service: Service,
    principal: Creator,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    return await created_run(
        request,
        principal,
        idempotency_key,
        lambda: service.create_run(
            body,
            idempotency_key=idempotency_key,
            actor=principal.actor,
            trace_parent=request.headers,
            tenant=principal.tenant,
        ),
    )


async def created_run(
    request: Request,
    principal: Principal,
    idempotency_key: str | None,
    create: Callable[[], Awaitable[tuple[RunView, bool]]],
) -> Response:
    """A create's answer (201, or 200 for an idempotent replay), one request per key at a
    time (a second while the first runs: 409 `idempotency-in-flight`)."""
    # Idempotency keys are per tenant: another tenant's use of the same key is no conflict.
    in_flight: set[tuple[str, str]] = request.app.state.idempotency_in_flight
    flight = (principal.tenant, idempotency_key) if idempotency_key is not None else None
    if flight is not None:
        if flight in in_flight:
            raise IdempotencyInFlight("a request with this Idempotency-Key is being processed")
        in_flight.add(flight)
    try:
        view, created = await create()
    finally:
        if flight is not None:
            in_flight.discard(flight)
    headers = {"Location": f"/v1/runs/{view.record.id}"}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    shown = models.RunOut.of(view, callbacks=sees_callbacks(principal))
    return json_body(shown, 201 if created else 200, headers)


@router.get(
    "/runs",
    response_model=models.RunList,
    responses={**AUTH, **responses(422)},
    summary="List runs, newest first",
)
async def list_runs(
    service: Service,
    principal: Reader,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: PageCursor = None,
    root_run_id: Annotated[
        str | None,
        Query(
            max_length=40,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="only the runs of this tree: its root and every descendant",
        ),
    ] = None,
) -> Response:
    views, next_cursor = await service.list_runs(
        status=status,
        limit=limit,
        cursor=cursor,
        scope=principal.scope,
        root_run_id=root_run_id,
    )
    return run_page(views, next_cursor, principal)


def run_page(views: list[RunView], next_cursor: str | None, principal: Principal) -> Response:
    shown = sees_callbacks(principal)
    page = models.RunList(
        data=[models.RunOut.of(v, callbacks=shown) for v in views], next_cursor=next_cursor
    )
    return json_body(page)


@router.get(
    "/runs/{run_id}/children",
    response_model=models.RunList,
    responses={**AUTH, **responses(404, 422)},
    summary="List a run's child runs, oldest first",
    description="The runs its agent tools' calls started (each answers one call): "
    f"`{REFERENCE}#agent-tools`.",
)
async def list_children(
    run_id: RunId,
    service: Service,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: PageCursor = None,
) -> Response:
    views, next_cursor = await service.children(
        run_id, limit=limit, cursor=cursor, scope=principal.scope
    )
    return run_page(views, next_cursor, principal)


@router.get(
    "/runs/{run_id}",
    response_model=models.RunOut,
    responses={**AUTH, **responses(404)},
    summary="Get a run",
    description=f"Statuses, `waiting_reason`, `required_action`, `error`: "
    f"`{REFERENCE}#the-run-object`.",
)
async def get_run(run_id: RunId, service: Service, principal: Reader) -> Response:
    view = await service.get_run(run_id, scope=principal.scope)
    return json_body(models.RunOut.of(view, callbacks=sees_callbacks(principal)))


@router.get(
    "/runs/{run_id}/messages",
    response_model=models.MessageList,
    responses={**AUTH, **responses(404, 422)},
    summary="The run's conversation, oldest first, a page at a time",
    description="Every message the run's model sees after its preamble: the history it "
    "was given (`from_history`: its `history`, or the whole conversation of the run it "
    "continues) and its own (its prompt, the model's answers, the tool results), as stored "
    "when the request is served. Each `message` has the shape `history` takes on "
    "`POST /v1/runs`.",
)
async def messages(
    run_id: RunId,
    service: Service,
    principal: RunReader,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: PageCursor = None,
) -> Response:
    entries, next_cursor = await service.messages(
        run_id, limit=limit, cursor=cursor, scope=principal.scope
    )
    page = models.MessageList(
        data=[models.ConversationMessageOut.of(e) for e in entries], next_cursor=next_cursor
    )
    return json_body(page)


@router.post(
    "/runs/{run_id}/tool-results",
    response_model=models.ToolResultsOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Submit tool results (partial and idempotent)",
    description=f"`output`, `is_error` and the answers to each case: `{REFERENCE}#tool-results`.",
)
async def submit_tool_results(
    run_id: RunId, body: ToolResultsIn, service: Service, principal: Submitter
) -> Response:
    outcome = await service.submit_tool_results(
        body, run_id=run_id, actor=principal.actor, scope=principal.scope
    )
    return await results_out(service, outcome)


@callbacks.post(
    "/{token}/tool-results",
    response_model=models.ToolResultsOut,
    responses=responses(400, 404, 409, 413, 422),
    summary="Submit tool results with a run's callback token (no API key)",
)
async def callback_tool_results(
    token: Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_-]+$")],
    body: ToolResultsIn,
    service: Service,
) -> Response:
    outcome = await service.submit_by_callback(body, token)
    return await results_out(service, outcome)


@router.post(
    "/runs/{run_id}/resolution",
    response_model=models.RunOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Resolve a parked invalid tool call",
    description=f"The actions: `{REFERENCE}#resolutions`.",
)
async def resolve(
    run_id: RunId, body: ResolutionIn, service: Service, principal: Resolver
) -> models.RunOut:
    view = await service.resolve(run_id, body, actor=principal.actor, scope=principal.scope)
    return models.RunOut.of(view, callbacks=sees_callbacks(principal))


@router.post(
    "/runs/{run_id}/cancel",
    response_model=models.RunOut,
    responses={**AUTH, **responses(404, 409)},
    summary="Cancel a run that has not ended",
)
async def cancel(run_id: RunId, service: Service, principal: Canceller) -> models.RunOut:
    view = await service.cancel(run_id, actor=principal.actor, scope=principal.scope)
    return models.RunOut.of(view, callbacks=sees_callbacks(principal))


@router.get(
    "/runs/{run_id}/events",
    response_model=models.EventList,
    responses={
        200: {
            "description": "The event log as JSON; with `Accept: text/event-stream`, "
            "server-sent events from `Last-Event-ID` (or `after`), live until the run ends.",
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        },
        **AUTH,
        **responses(404, 422),
    },
    summary="The run's event log (JSON, or a live server-sent event stream)",
    description=f"Every event type and its `data`: `{REFERENCE}#events` (the webhooks "
    f"announce five of them: `{REFERENCE}#webhooks`). With `tree=true`, its descendants' "
    "events too, the position a `cursor` (`Last-Event-ID`, `next_cursor`).",
)
async def events(
    run_id: RunId,
    request: Request,
    service: Service,
    principal: RunReader,
    after: Annotated[int, Query(ge=0, le=2**31 - 1)] = 0,
    last_event_id: Annotated[
        str | None,
        Header(
            max_length=TREE_CURSOR_LENGTH,
            pattern=r"^[A-Za-z0-9_-]+$",
            description="the `id` of the last event received: a `seq` (with `tree=true`, a cursor)",
        ),
    ] = None,
    tree: Annotated[
        bool, Query(description="the run's events and every descendant's, each with `run_id`")
    ] = False,
    cursor: TreeCursor = None,
    limit: Annotated[int, Query(ge=1, le=1000, description="the most events a page holds")] = 1000,
) -> models.EventList | EventSourceResponse:
    streaming = "text/event-stream" in request.headers.get("accept", "")
    hub: EventHub = request.app.state.event_hub
    if tree:
        if after:
            raise InvalidRequest("with tree=true, continue from a `cursor`, not `after`")
        position = last_event_id if streaming and last_event_id is not None else cursor
        return await tree_events(hub, service, run_id, principal, position, limit, streaming)
    if cursor is not None:
        raise InvalidRequest("`cursor` continues a tree's events (tree=true); a run's: `after`")
    if last_event_id is not None and not SEQ.fullmatch(last_event_id):
        raise InvalidRequest("Last-Event-ID is an event's `seq` (with tree=true, a cursor)")
    if streaming:
        await service.get_run(run_id, scope=principal.scope)  # 404 before the stream starts
        start = after
        if last_event_id is not None:
            start = int(last_event_id)
        stream = server_sent_events(hub, run_id, start, callbacks=sees_callbacks(principal))
        return EventSourceResponse(stream, ping=15)
    records = await service.events(run_id, after=after, limit=limit, scope=principal.scope)
    shown = sees_callbacks(principal)
    return models.EventList(data=[models.EventOut.of(e, callbacks=shown) for e in records])


#: The longest a wait may be asked to last (proxies commonly cut idle requests at 60 s).
MAX_WAIT_SECONDS = 60.0
WAIT_OUTCOME = "Wait-Outcome"
WAIT_DESCRIPTION = f"""Holds the request until the run's status is one of `status` (default:
`requires_action` or any terminal status) or `timeout` seconds pass, then answers with the
run as `GET /v1/runs/{{run_id}}` shows it: 200 either way, and the `{WAIT_OUTCOME}` header
says which: `reached` (the status is one you named), `final` (the run is `completed` or
`cancelled`, which it never leaves, though you did not name it), `timeout` (also when the
server is shutting down). A run already in a wanted status is answered at once. The
server holds no database connection while it waits: it is woken by the run's commits."""


@router.get(
    "/runs/{run_id}/wait",
    response_model=models.RunOut,
    responses={
        200: {
            "description": "The run when the wait ended",
            "headers": {
                WAIT_OUTCOME: {
                    "description": "why the wait ended",
                    "schema": {"type": "string", "enum": ["reached", "final", "timeout"]},
                }
            },
        },
        **AUTH,
        **responses(404, 422),
    },
    summary="Wait until a run reaches a status (long poll)",
    description=WAIT_DESCRIPTION,
)
async def wait_for_run(
    run_id: RunId,
    request: Request,
    service: Service,
    principal: RunReader,
    status: Annotated[
        list[RunStatus] | None,
        Query(
            description="a status to wait for; repeat for several (default: "
            "`requires_action` and the terminal statuses)"
        ),
    ] = None,
    timeout: Annotated[
        float,
        Query(ge=0, le=MAX_WAIT_SECONDS, description="seconds to wait at most (0: answer at once)"),
    ] = 30.0,
) -> Response:
    wanted = frozenset(status) if status else SETTLED
    hub: EventHub = request.app.state.event_hub
    try:
        record = await wait_while_connected(request, hub, run_id, wanted, timeout, principal.scope)
    except ClientGone:
        return Response(status_code=499)  # nobody reads it (nginx's "client closed request")
    if record is None:
        raise RunNotFound(f"no run with id {run_id}")
    if record.status in wanted:
        outcome = "reached"
    else:
        outcome = "final" if record.status in FINAL else "timeout"
    view = await service.view(record)
    shown = sees_callbacks(principal)
    return json_body(models.RunOut.of(view, callbacks=shown), headers={WAIT_OUTCOME: outcome})


@router.get(
    "/usage",
    response_model=models.UsageOut,
    responses={**AUTH, **responses(422)},
    summary="Usage and cost of every model call (attempts included) in a time range",
)
async def usage(
    request: Request,
    reads: Reads,
    principal: UsageReader,
    from_: Annotated[
        str | None,
        Query(
            alias="from",
            pattern=TIMESTAMP,
            json_schema_extra={"format": "date-time"},
            description="RFC 3339 with a time zone; default: a day before `to`",
        ),
    ] = None,
    to: Annotated[
        str | None,
        Query(
            pattern=TIMESTAMP,
            json_schema_extra={"format": "date-time"},
            description="RFC 3339 with a time zone, not before `from` (else 422 "
            "`invalid-request`); default: now",
        ),
    ] = None,
) -> models.UsageOut:
    end = _instant(to, "to") if to is not None else request.app.state.clock.now()
    start = _instant(from_, "from") if from_ is not None else _day_before(end)
    if start > end:
        raise InvalidRequest("from must not be after to")
    totals = await reads.usage(start, end, principal.scope)
    return models.UsageOut.model_validate({"from": start, "to": end, **totals})


def _day_before(moment: datetime) -> datetime:
    try:
        return moment - timedelta(days=1)
    except OverflowError:  # `to` in the first day of year 1
        return datetime.min.replace(tzinfo=UTC)


def _instant(text: str, name: str) -> datetime:
    """An RFC 3339 timestamp (matched by `TIMESTAMP`) as an aware UTC datetime."""
    try:
        return datetime.fromisoformat(text.replace("z", "Z")).astimezone(UTC)
    except (ValueError, OverflowError):
        raise InvalidRequest(f"{name} is not a valid point in time: {text!r}") from None
