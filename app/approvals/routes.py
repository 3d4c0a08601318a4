"""The approvals routes: decide a run's gated tool calls, a tenant's inbox of pending
approvals, and a run's approvals (`app.approvals.service`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field

from app.api import models
from app.api.problems import responses
from app.api.routes import AUTH, REFERENCE, PageCursor, Reader, RunId, json_body
from app.api.security import authorize
from app.approvals import policies
from app.approvals.service import ApprovalService
from app.core.lifecycle import ApprovalStatus
from app.service.principals import Permission, Principal, sees_callbacks
from app.service.schemas import DecisionsIn
from app.service.types import ToolCallRecord
from app.timestamps import Timestamp

router = APIRouter(prefix="/v1", tags=["approvals"])
Approver = Annotated[Principal, Depends(authorize(Permission.RUNS_APPROVE))]


async def approvals_of(request: Request) -> ApprovalService:
    approvals: ApprovalService = request.app.state.approvals
    return approvals


Approvals = Annotated[ApprovalService, Depends(approvals_of)]


class ApprovalOut(BaseModel):
    run_id: str
    tool_call_id: str
    round: int
    position: int = Field(description="the call's place in its round")
    name: str
    arguments: Any = Field(description="the model's arguments")
    arguments_hash: str = Field(description="what a decision names the arguments by")
    status: ApprovalStatus
    executed_arguments: Any = Field(
        default=None, description="approved with edited arguments: the ones executed"
    )
    message: str | None = Field(default=None, description="rejected: what the model was told")
    requested_at: Timestamp | None
    due_at: Timestamp | None = Field(description="when `approval_on_timeout` decides it")
    decided_by: str | None
    decided_at: Timestamp | None

    @classmethod
    def of(cls, call: ToolCallRecord) -> ApprovalOut:
        rejected = call.approval == ApprovalStatus.REJECTED and isinstance(call.result, dict)
        return cls(
            run_id=call.run_id,
            tool_call_id=call.call_id,
            round=call.round,
            position=call.position,
            name=call.name,
            arguments=call.arguments,
            arguments_hash=policies.arguments_hash(call.arguments),
            status=ApprovalStatus(call.approval or ApprovalStatus.PENDING),
            executed_arguments=call.executed_arguments,
            message=call.result.get("output") if rejected else None,
            requested_at=call.approval_requested_at,
            due_at=call.approval_due_at,
            decided_by=call.decided_by,
            decided_at=call.decided_at,
        )


class ApprovalList(BaseModel):
    data: list[ApprovalOut]
    next_cursor: str | None = None


@router.post(
    "/runs/{run_id}/approvals",
    response_model=models.RunOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Approve or reject gated tool calls (idempotent)",
    description=f"Decisions, their refusals and what the model sees: `{REFERENCE}#approvals`.",
)
async def decide(
    run_id: RunId, body: DecisionsIn, approvals: Approvals, principal: Approver
) -> Response:
    view = await approvals.decide(run_id, body, actor=principal.actor, scope=principal.scope)
    return json_body(models.RunOut.of(view, callbacks=sees_callbacks(principal)))


@router.get(
    "/runs/{run_id}/approvals",
    response_model=ApprovalList,
    responses={**AUTH, **responses(404)},
    summary="A run's gated tool calls, pending and decided, in order",
)
async def run_approvals(run_id: RunId, approvals: Approvals, principal: Reader) -> Response:
    calls = await approvals.of_run(run_id, scope=principal.scope)
    return json_body(ApprovalList(data=[ApprovalOut.of(c) for c in calls]))


@router.get(
    "/approvals",
    response_model=ApprovalList,
    responses={**AUTH, **responses(422)},
    summary="Pending approvals across the caller's runs, newest first",
)
async def pending_approvals(
    approvals: Approvals,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: PageCursor = None,
) -> Response:
    calls, next_cursor = await approvals.pending(
        tenant=principal.tenant, limit=limit, cursor=cursor
    )
    return json_body(ApprovalList(data=[ApprovalOut.of(c) for c in calls], next_cursor=next_cursor))
