"""The limits' route: `POST /v1/runs/{id}/limits` (`RunLimitsService.set_limits`),
mounted by the composition root (app.main) beside the API's own routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request

from app.api import models
from app.api.problems import responses
from app.api.routes import AUTH, REFERENCE, Operator, RunId, Service
from app.limits.run_limits import RunLimitsService
from app.service.principals import sees_callbacks
from app.service.schemas import LimitsIn

router = APIRouter(prefix="/v1", tags=["runs"])


async def run_limits_of(request: Request) -> RunLimitsService:
    limits: RunLimitsService = request.app.state.run_limits
    return limits


RunLimits = Annotated[RunLimitsService, Depends(run_limits_of)]


@router.post(
    "/runs/{run_id}/limits",
    response_model=models.RunOut,
    responses={**AUTH, **responses(400, 404, 409, 413, 422)},
    summary="Change a run's limits (and resume it when it waits on a budget)",
    description="The limits named are set (`null` removes one), the others are kept; a run "
    "suspended on a budget (`waiting_reason.type` `budget`) is queued again and its next "
    f"model call checked against them: `{REFERENCE}#budgets`.",
)
async def set_limits(
    run_id: RunId, body: LimitsIn, service: Service, limits: RunLimits, principal: Operator
) -> models.RunOut:
    record = await limits.set_limits(run_id, body, actor=principal.actor, scope=principal.scope)
    view = await service.view(record)
    return models.RunOut.of(view, callbacks=sees_callbacks(principal))
