"""`/v1/queues`: executors without a public address lease tool calls of the runs that
name their queue, extend their leases, and answer through them (`app.toolqueue.service`;
the protocol: docs/queue.md)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import BaseModel, Field

from app.api.live import ClientGone, while_connected
from app.api.models import ToolResultsOut
from app.api.problems import responses
from app.api.routes import AUTH, Service, Worker, json_body, results_out
from app.service.schemas import QUEUE_NAME, HeartbeatIn, LeasedResultIn, LeaseIn
from app.service.types import ToolCallRecord
from app.timestamps import Timestamp
from app.toolqueue.service import QueueService

router = APIRouter(prefix="/v1/queues", tags=["queues"])

Queue = Annotated[str, Path(pattern=QUEUE_NAME, description="the queue's name")]
Token = Annotated[
    str,
    Path(
        min_length=1,
        max_length=120,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="a call's `lease_token`, from its lease",
    ),
]


async def queues_of(request: Request) -> QueueService:
    queues: QueueService = request.app.state.queues
    return queues


Queues = Annotated[QueueService, Depends(queues_of)]


class LeasedCallOut(BaseModel):
    run_id: str
    tool_call_id: str = Field(description="stable across leases: an idempotency key")
    name: str
    arguments: Any
    round: int
    attempt: int = Field(description="1 for the first lease of this call, 2 after one lapsed…")
    lease_token: str = Field(description="names this lease in heartbeats and the result")
    lease_expires_at: Timestamp

    @classmethod
    def of(cls, call: ToolCallRecord, token: str) -> LeasedCallOut:
        assert call.lease_expires_at is not None
        return cls(
            run_id=call.run_id,
            tool_call_id=call.call_id,
            name=call.name,
            arguments=call.executes,
            round=call.round,
            attempt=call.attempts,
            lease_token=token,
            lease_expires_at=call.lease_expires_at,
        )


class LeaseOut(BaseModel):
    calls: list[LeasedCallOut] = Field(description="empty when none came within `wait`")


class LeaseExtendedOut(BaseModel):
    lease_token: str
    lease_expires_at: Timestamp


LEASE_DESCRIPTION = """Leases up to `limit` pending tool calls of runs whose `tool_queue` (or
whose tool's `queue`) is this queue, oldest first, each for `lease_seconds`. When none is
leasable the request waits up to `wait` seconds for one (holding no database connection),
then answers with the calls it got, or none. A call whose lease lapsed unanswered (its
executor died) is leased again, with a new `lease_token` and `attempt` + 1: calls are
executed at least once, so use `tool_call_id` to make side effects idempotent. Extend a
lease while the tool runs (`…/heartbeat`), answer through it (`…/result`)."""


@router.post(
    "/{queue}/lease",
    response_model=LeaseOut,
    responses={**AUTH, **responses(400, 413, 422)},
    summary="Lease pending tool calls of a queue (long poll)",
    description=LEASE_DESCRIPTION,
)
async def lease(
    queue: Queue, body: LeaseIn, request: Request, queues: Queues, principal: Worker
) -> Response:
    try:
        calls = await while_connected(
            request, queues.lease(queue, body, principal.actor, principal.tenant)
        )
    except ClientGone:
        return Response(status_code=499)  # (its calls lapse and are offered again)
    return json_body(LeaseOut(calls=[LeasedCallOut.of(c, queues.token(c)) for c in calls]))


@router.post(
    "/{queue}/leases/{lease_token}/heartbeat",
    response_model=LeaseExtendedOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Extend a lease while its tool runs",
    description="Extends the lease by `lease_seconds` from now. 409 `tool-call-lease-lost` "
    "once the lease moved on (the call was leased again after this lease lapsed, answered, "
    "or its run stopped waiting): stop the tool, its result would be refused.",
)
async def heartbeat(
    queue: Queue, lease_token: Token, body: HeartbeatIn, queues: Queues, principal: Worker
) -> LeaseExtendedOut:
    until = await queues.heartbeat(queue, lease_token, body, principal.tenant)
    return LeaseExtendedOut(lease_token=lease_token, lease_expires_at=until)


@router.post(
    "/{queue}/leases/{lease_token}/result",
    response_model=ToolResultsOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Answer a leased tool call",
    description="Submits the call's result, as `POST /v1/runs/{run_id}/tool-results` does "
    "(the run resumes when it was the last open call). The same result again is a no-op; "
    "409 `tool-call-lease-lost` when another lease holds the call now, "
    "`tool-result-conflict` when it has a different result, `run-state-conflict` when the "
    "run stopped waiting.",
)
async def result(
    queue: Queue,
    lease_token: Token,
    body: LeasedResultIn,
    service: Service,
    queues: Queues,
    principal: Worker,
) -> Response:
    outcome = await queues.submit(queue, lease_token, body, principal.actor, principal.tenant)
    return await results_out(service, outcome)
