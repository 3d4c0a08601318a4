"""The forks' routes: `GET /v1/runs/{id}/checkpoints`, `POST /v1/runs/{id}/fork` and
`GET /v1/runs/{id}/forks`, mounted by the composition root (app.main)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field

from app.api import models
from app.api.problems import responses
from app.api.routes import (
    AUTH,
    REFERENCE,
    Creator,
    IdempotencyKey,
    PageCursor,
    Reader,
    RunId,
    created_run,
    json_body,
    run_page,
)
from app.core.encode import usage_to_dict
from app.forks.checkpoints import Checkpoint
from app.forks.service import ForkService
from app.forks.specs import ForkIn

router = APIRouter(prefix="/v1", tags=["forks"])


async def forks_of(request: Request) -> ForkService:
    forks: ForkService = request.app.state.forks
    return forks


Forks = Annotated[ForkService, Depends(forks_of)]


class CheckpointOut(BaseModel):
    seq: int = Field(description="messages before it: a fork at it starts from the first `seq`")
    kind: str = Field(
        description="`start` (the given history and the prompt), `tool_calls` (the model's "
        "calls end it: a fork waits for them), `tool_results` (a round's results end it), "
        "`answer` (the model's message without calls ends it)"
    )
    turn: int = Field(description="model calls made before it")
    usage: dict[str, Any] = Field(description="the usage of those calls")

    @classmethod
    def of(cls, c: Checkpoint) -> CheckpointOut:
        return cls(seq=c.seq, kind=c.kind, turn=c.turn, usage=usage_to_dict(c.usage))


class CheckpointList(BaseModel):
    run_id: str
    messages: int = Field(description="messages in the run's conversation now")
    data: list[CheckpointOut]


@router.get(
    "/runs/{run_id}/checkpoints",
    response_model=CheckpointList,
    responses={**AUTH, **responses(404, 422)},
    summary="A run's checkpoints: where it can be forked",
    description=f"Read off the run's log; nothing is written to have them: `{REFERENCE}#forks`.",
)
async def list_checkpoints(run_id: RunId, forks: Forks, principal: Reader) -> Response:
    found = await forks.checkpoints(run_id, scope=principal.scope)
    return json_body(
        CheckpointList(
            run_id=found.run_id,
            messages=found.messages,
            data=[CheckpointOut.of(c) for c in found.data],
        )
    )


@router.post(
    "/runs/{run_id}/fork",
    status_code=201,
    response_model=models.RunOut,
    responses={
        200: {"model": models.RunOut, "description": "Idempotent replay: the fork already made"},
        **AUTH,
        **responses(400, 404, 409, 413, 422),
    },
    summary="Fork a run from a checkpoint (or replay it)",
    description=f"A new run from the run's first `at` messages: `{REFERENCE}#forks`.",
)
async def fork_run(
    run_id: RunId,
    body: ForkIn,
    request: Request,
    forks: Forks,
    principal: Creator,
    idempotency_key: IdempotencyKey = None,
) -> Response:
    return await created_run(
        request,
        principal,
        idempotency_key,
        lambda: forks.fork(
            run_id,
            body,
            scope=principal.scope,
            actor=principal.actor,
            idempotency_key=idempotency_key,
            trace_parent=request.headers,
        ),
    )


@router.get(
    "/runs/{run_id}/forks",
    response_model=models.RunList,
    responses={**AUTH, **responses(404, 422)},
    summary="List the runs forked from a run, oldest first",
    description="Forks and replays made from any of its checkpoints (a fork's own forks "
    f"are listed on it): `{REFERENCE}#forks`.",
)
async def list_forks(
    run_id: RunId,
    forks: Forks,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: PageCursor = None,
) -> Response:
    views, next_cursor = await forks.forks(
        run_id, limit=limit, cursor=cursor, scope=principal.scope
    )
    return run_page(views, next_cursor, principal)
