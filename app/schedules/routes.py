"""The schedules' routes: `/v1/schedules` (create, list), `/v1/schedules/{key}` (read,
change, delete), its pause, resume, trigger and backfill, its ticks and the times it
would fire; mounted by the composition root (app.main)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query, Request, Response
from pydantic import AwareDatetime, BaseModel, Field

from app.api.problems import responses
from app.api.routes import AUTH, REFERENCE, Reader, json_body
from app.api.security import authorize
from app.schedules.cron import zone
from app.schedules.firing import Outcome
from app.schedules.rows import ScheduleRecord, TickRecord
from app.schedules.service import MAX_FIRE_TIMES, FireTime, ScheduleService
from app.schedules.specs import BackfillIn, PauseIn, ScheduleIn, SchedulePatch, TriggerIn, when
from app.service.principals import Permission, Principal
from app.service.schemas import AGENT_NAME
from app.timestamps import Timestamp, iso

router = APIRouter(prefix="/v1", tags=["schedules"])
Manager = Annotated[Principal, Depends(authorize(Permission.SCHEDULES_MANAGE))]
Key = Annotated[
    str, Path(min_length=1, max_length=64, pattern=AGENT_NAME, description="a schedule's key")
]
DOCS = f"`{REFERENCE}#schedules`"


async def schedules_of(request: Request) -> ScheduleService:
    schedules: ScheduleService = request.app.state.schedules
    return schedules


Schedules = Annotated[ScheduleService, Depends(schedules_of)]


class ScheduleOut(BaseModel):
    key: str
    cron: str
    timezone: str
    run: dict[str, Any] = Field(description="the run each tick starts, as given")
    overlap: str
    catchup: str
    catchup_window_seconds: int
    jitter_seconds: int
    start_at: Timestamp | None
    end_at: Timestamp | None
    paused: bool
    note: str | None
    next_fire_at: Timestamp | None = Field(
        description="the next tick's scheduled time (UTC); null once there is none"
    )
    next_fire_at_local: str | None = Field(description="the same time in the schedule's zone")
    buffered_time: Timestamp | None = Field(
        description="buffer_one: the tick that starts when the last run ends"
    )
    last_run_id: str | None = Field(description="the last run the schedule started")
    created_at: Timestamp
    created_by: str | None
    updated_at: Timestamp

    @classmethod
    def of(cls, r: ScheduleRecord) -> ScheduleOut:
        spec = r.spec
        local = None
        if r.next_fire_at is not None:
            local = r.next_fire_at.astimezone(zone(spec["timezone"])).isoformat()
        return cls(
            key=r.key,
            cron=spec["cron"],
            timezone=spec["timezone"],
            run=spec["run"],
            overlap=spec["overlap"],
            catchup=spec["catchup"],
            catchup_window_seconds=spec["catchup_window_seconds"],
            jitter_seconds=spec["jitter_seconds"],
            start_at=when(spec.get("start_at")),
            end_at=when(spec.get("end_at")),
            paused=r.paused,
            note=r.note,
            next_fire_at=r.next_fire_at,
            next_fire_at_local=local,
            buffered_time=r.buffered_time,
            last_run_id=r.last_run_id,
            created_at=r.created_at,
            created_by=r.created_by,
            updated_at=r.updated_at,
        )


class ScheduleList(BaseModel):
    data: list[ScheduleOut]
    next_cursor: str | None


class OutcomeOut(BaseModel):
    scheduled_time: Timestamp
    outcome: str = Field(
        description="started | skipped | buffered | failed (the run body was refused) | "
        "exists (the tick had a recorded outcome: nothing done)"
    )
    run_id: str | None = Field(description="the run started, or the one still running")
    reason: str | None

    @classmethod
    def of(cls, o: Outcome) -> OutcomeOut:
        return cls(
            scheduled_time=o.scheduled_time, outcome=o.outcome, run_id=o.run_id, reason=o.reason
        )


class Outcomes(BaseModel):
    data: list[OutcomeOut]


class TickOut(BaseModel):
    scheduled_time: Timestamp
    source: str = Field(description="cron | trigger | backfill")
    outcome: str = Field(description="started | skipped | buffered | missed | failed")
    reason: str | None = Field(
        description="overlap | buffer_full | superseded | catchup | catchup_window | why the "
        "run was refused"
    )
    run_id: str | None
    count: int = Field(description="missed: how many ticks (from this one to `last_time`)")
    last_time: Timestamp | None
    recorded_at: Timestamp

    @classmethod
    def of(cls, t: TickRecord) -> TickOut:
        return cls(
            scheduled_time=t.scheduled_time,
            source=t.source,
            outcome=t.outcome,
            reason=t.reason,
            run_id=t.run_id,
            count=t.count,
            last_time=t.last_time,
            recorded_at=t.recorded_at,
        )


class TickList(BaseModel):
    data: list[TickOut]
    next_cursor: str | None = Field(description="`before` for the next (older) page")


class FireTimeOut(BaseModel):
    utc: Timestamp
    local: str = Field(description="in the schedule's zone, with its offset")

    @classmethod
    def of(cls, f: FireTime) -> FireTimeOut:
        return cls(utc=f.utc, local=f.local.isoformat())


class FireTimes(BaseModel):
    timezone: str
    data: list[FireTimeOut]


@router.post(
    "/schedules",
    response_model=ScheduleOut,
    status_code=201,
    responses={**AUTH, **responses(400, 403, 409, 413, 422)},
    summary="Create a schedule: runs started by the clock",
    description=f"Each tick of `cron` in `timezone` starts the run `run` describes, exactly "
    f"once across every worker: {DOCS}.",
)
async def create_schedule(body: ScheduleIn, schedules: Schedules, principal: Manager) -> Response:
    made = await schedules.create(body, tenant=principal.tenant, actor=principal.actor)
    return json_body(ScheduleOut.of(made), 201)


@router.get(
    "/schedules",
    response_model=ScheduleList,
    responses={**AUTH, **responses(422)},
    summary="List the tenant's schedules, by key",
)
async def list_schedules(
    schedules: Schedules,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[
        str | None,
        Query(max_length=64, pattern=AGENT_NAME, description="`next_cursor` of the page before"),
    ] = None,
) -> Response:
    found, more = await schedules.page(scope=principal.scope, limit=limit, after=cursor)
    return json_body(ScheduleList(data=[ScheduleOut.of(s) for s in found], next_cursor=more))


@router.get(
    "/schedules/{key}",
    response_model=ScheduleOut,
    responses={**AUTH, **responses(404, 422)},
    summary="A schedule",
)
async def get_schedule(key: Key, schedules: Schedules, principal: Reader) -> Response:
    return json_body(ScheduleOut.of(await schedules.get(key, tenant=principal.tenant)))


@router.patch(
    "/schedules/{key}",
    response_model=ScheduleOut,
    responses={**AUTH, **responses(400, 403, 404, 409, 413, 422)},
    summary="Change a schedule's fields",
    description="A change of `cron`, `timezone`, `start_at` or `end_at` plans the next tick "
    f"from now; the runs started already are unchanged: {DOCS}.",
)
async def update_schedule(
    key: Key, body: SchedulePatch, schedules: Schedules, principal: Manager
) -> Response:
    return json_body(ScheduleOut.of(await schedules.update(key, body, tenant=principal.tenant)))


@router.delete(
    "/schedules/{key}",
    status_code=204,
    responses={**AUTH, **responses(403, 404, 422)},
    summary="Delete a schedule (the runs it started stay)",
)
async def delete_schedule(key: Key, schedules: Schedules, principal: Manager) -> Response:
    await schedules.delete(key, tenant=principal.tenant)
    return Response(status_code=204)


@router.post(
    "/schedules/{key}/pause",
    response_model=ScheduleOut,
    responses={**AUTH, **responses(400, 403, 404, 409, 422)},
    summary="Pause a schedule: no tick fires until it is resumed",
)
async def pause_schedule(
    key: Key,
    schedules: Schedules,
    principal: Manager,
    body: Annotated[PauseIn | None, Body()] = None,
) -> Response:
    made = await schedules.pause(key, body or PauseIn(), tenant=principal.tenant)
    return json_body(ScheduleOut.of(made))


@router.post(
    "/schedules/{key}/resume",
    response_model=ScheduleOut,
    responses={**AUTH, **responses(403, 404, 409, 422)},
    summary="Resume a schedule: its next tick is the first after now",
)
async def resume_schedule(key: Key, schedules: Schedules, principal: Manager) -> Response:
    return json_body(ScheduleOut.of(await schedules.resume(key, tenant=principal.tenant)))


@router.post(
    "/schedules/{key}/trigger",
    response_model=OutcomeOut,
    status_code=201,
    responses={**AUTH, **responses(400, 403, 404, 422)},
    summary="Start one run now (also while paused)",
    description="A tick now, outside the cron; `overlap` (default `allow_all`) says what "
    f"it does while the schedule's last run has not ended: {DOCS}.",
)
async def trigger_schedule(
    key: Key,
    schedules: Schedules,
    principal: Manager,
    body: Annotated[TriggerIn | None, Body()] = None,
) -> Response:
    overlap = (body or TriggerIn()).overlap
    done = await schedules.trigger(key, overlap, tenant=principal.tenant)
    return json_body(OutcomeOut.of(done), 201)


@router.post(
    "/schedules/{key}/backfill",
    response_model=Outcomes,
    responses={**AUTH, **responses(400, 403, 404, 422)},
    summary="Start the ticks of a past window",
    description="Each tick of the cron from `from` to `to` (both included) not recorded "
    f"yet starts a run, under the backfill's `overlap` (default `allow_all`): {DOCS}.",
)
async def backfill_schedule(
    key: Key, body: BackfillIn, schedules: Schedules, principal: Manager
) -> Response:
    done = await schedules.backfill(key, body, tenant=principal.tenant)
    return json_body(Outcomes(data=[OutcomeOut.of(o) for o in done]))


@router.get(
    "/schedules/{key}/fire-times",
    response_model=FireTimes,
    responses={**AUTH, **responses(404, 422)},
    summary="The times a schedule would fire, in UTC and in its zone",
)
async def fire_times(
    key: Key,
    schedules: Schedules,
    principal: Reader,
    start: Annotated[
        AwareDatetime | None,
        Query(alias="from", description="after this time (default: now)"),
    ] = None,
    count: Annotated[int, Query(ge=1, le=MAX_FIRE_TIMES)] = 10,
) -> Response:
    record, times = await schedules.fire_times(
        key, tenant=principal.tenant, start=start, count=count
    )
    out = FireTimes(timezone=record.spec["timezone"], data=[FireTimeOut.of(t) for t in times])
    return json_body(out)


@router.get(
    "/schedules/{key}/ticks",
    response_model=TickList,
    responses={**AUTH, **responses(404, 422)},
    summary="What a schedule's ticks became (started, skipped, buffered, missed), newest first",
)
async def list_ticks(
    key: Key,
    schedules: Schedules,
    principal: Reader,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
    before: Annotated[
        AwareDatetime | None, Query(description="`next_cursor` of the page before")
    ] = None,
) -> Response:
    found = await schedules.ticks(key, tenant=principal.tenant, limit=limit + 1, before=before)
    more = found[limit - 1].scheduled_time if len(found) > limit else None
    page = TickList(
        data=[TickOut.of(t) for t in found[:limit]],
        next_cursor=None if more is None else iso(more),
    )
    return json_body(page)
