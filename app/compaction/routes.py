"""Compaction's route: `GET /v1/runs/{id}/log`, the messages of a run's log (the
originals a compaction replaced among them), mounted by the composition root (app.main)
beside the API's own routes."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel, Field

from app.api.models import HistoryMessageOut
from app.api.problems import responses
from app.api.routes import AUTH, PageCursor, Reader, RunId, Service
from app.compaction import log
from app.service.messages import decode_cursor

router = APIRouter(prefix="/v1", tags=["runs"])


class LogMessageOut(BaseModel):
    index: int = Field(description="the message's position among the log's messages, from 0")
    batch: int = Field(
        description="the log batch that wrote it: 1 at the run's creation, then one per "
        "change that added messages"
    )
    from_history: bool = Field(description="a message of the history the run was given")
    replaces: bool = Field(
        description="its batch replaced the conversation so far (a compaction): the "
        "conversation is this batch's messages and what later batches add"
    )
    message: HistoryMessageOut

    @classmethod
    def of(cls, e: log.LogEntry) -> LogMessageOut:
        return cls(
            index=e.index,
            batch=e.batch,
            from_history=e.from_history,
            replaces=e.replaces,
            message=HistoryMessageOut.model_validate(e.message),
        )


class LogMessageList(BaseModel):
    data: list[LogMessageOut]
    next_cursor: str | None


@router.get(
    "/runs/{run_id}/log",
    response_model=LogMessageList,
    responses={**AUTH, **responses(404, 422)},
    summary="Every message the run's log holds, oldest first, a page at a time",
    description="The messages each batch of the run's log wrote, in order: the originals "
    "of the turns a compaction replaced with a summary among them (`GET "
    "/v1/runs/{run_id}/messages` shows the conversation as it is now). A compaction's "
    "batch (`replaces`) restates the conversation it left: the messages it kept, the "
    "summary and the recent turns. `docs/compaction.md`.",
)
async def run_log(
    run_id: RunId,
    service: Service,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    cursor: PageCursor = None,
) -> LogMessageList:
    if cursor:
        decode_cursor(cursor)  # (a malformed cursor costs no read)
    view = await service.get_run(run_id, with_log=True, scope=principal.scope)
    entries, next_cursor = log.page(log.entries(view.record.state, view.record.log), limit, cursor)
    return LogMessageList(data=[LogMessageOut.of(e) for e in entries], next_cursor=next_cursor)
