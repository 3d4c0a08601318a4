"""The schedules pages, /admin/schedules: the tenant's schedules by key (each with its
cron and zone, its next tick in that zone, whether it is paused and why, its overlap and
catch-up, its last run) and a schedule's page: its fields and the run each tick starts,
its next fire times, its recent ticks and what each became. Schedules are made and
changed through the API (`/v1/schedules`); any role that may read runs sees them, as
`GET /v1/schedules` lets it.

A role holding schedules:manage may also pause a schedule (with a note), resume it and
trigger a tick now. Each form posts to POST /admin/schedules/{key}/{action}, is parsed
once into its typed action, is answered first with a confirmation page and is
CSRF-checked, as the runs' actions are (`app.dashboard.actions`, `perform`). Answers: an
unknown action 404; a role without schedules:manage 403; another tenant's or an unknown
schedule 404; a form that does not parse 422 and a refusal by the service (409, ...) on
the schedule's page; nothing is changed in any of these.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Any, ClassVar, Self, assert_never, get_args

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError
from starlette.datastructures import FormData

from app.dashboard import auth
from app.dashboard.actions.forms import Errors, Invalid, Pairs
from app.dashboard.web import (
    Form,
    Session,
    error_page,
    redirect,
    render,
    requiring,
    schedules_of,
    scope_of,
    tenant_of,
)
from app.schedules.cron import CronError, zone
from app.schedules.rows import ScheduleRecord
from app.schedules.specs import PauseIn, when
from app.service.errors import ServiceError
from app.service.principals import Permission
from app.service.schemas import AGENT_NAME

router = APIRouter(prefix="/admin/schedules", include_in_schema=False)

PAGE_SIZE = 25
#: The fire times and the ticks a schedule's page lists.
FIRE_TIMES = 5
TICKS_SHOWN = 50
NAME = re.compile(AGENT_NAME)

#: The signed-in session, whose role must hold schedules:manage (a 403 page otherwise).
Manager = Annotated[auth.Session, Depends(requiring(Permission.SCHEDULES_MANAGE))]

#: What a trigger does while the schedule's last run has not ended (its `overlap`), in
#: the order the form offers them; `allow_all` is the API's default.
OVERLAPS: dict[str, str] = {
    "allow_all": "start it anyway (allow_all)",
    "skip": "skip this tick (skip)",
    "buffer_one": "start it when that run ends (buffer_one)",
    "cancel_other": "cancel that run, then start this one (cancel_other)",
}


@dataclass(frozen=True, slots=True)
class Card:
    """A schedule as the pages show it (`record`: its fields as stored)."""

    record: ScheduleRecord

    @property
    def spec(self) -> dict[str, Any]:
        return self.record.spec

    @property
    def cron(self) -> str:
        return str(self.spec.get("cron", "?"))

    @property
    def timezone(self) -> str:
        return str(self.spec.get("timezone", "UTC"))

    @property
    def overlap(self) -> str:
        return str(self.spec.get("overlap", "?"))

    @property
    def catchup(self) -> str:
        return str(self.spec.get("catchup", "?"))

    @property
    def run(self) -> dict[str, Any]:
        run = self.spec.get("run")
        return run if isinstance(run, dict) else {}

    @property
    def agent(self) -> str | None:
        """The named agent the run body starts from (`name` or `name@version`), if any."""
        agent = self.run.get("agent")
        return agent if isinstance(agent, str) else None

    @property
    def start_at(self) -> datetime | None:
        return when(self.spec.get("start_at"))

    @property
    def end_at(self) -> datetime | None:
        return when(self.spec.get("end_at"))

    @property
    def next_local(self) -> datetime | None:
        return self.local(self.record.next_fire_at)

    def local(self, value: datetime | None) -> datetime | None:
        """`value` in the schedule's zone (UTC if the zone is unknown here)."""
        if value is None:
            return None
        try:
            return value.astimezone(zone(self.timezone))
        except CronError:
            return value


# --- actions ---------------------------------------------------------------------------


def _text(form: FormData, name: str, errors: Errors) -> str:
    value = form.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        errors[name] = f"{name}: expected text, not a file"
        return ""
    return value


@dataclass(frozen=True, slots=True)
class Pause:
    name: ClassVar[str] = "pause"

    note: str | None

    @classmethod
    def parse(cls, form: FormData) -> Self | Invalid:
        """`note`: why (optional; at most what the API takes)."""
        errors: Errors = {}
        note = _text(form, "note", errors).strip() or None
        if errors:
            return Invalid(errors)
        try:
            PauseIn(note=note)
        except ValidationError as exc:
            return Invalid({"note": "; ".join(str(e["msg"]) for e in exc.errors())})
        return cls(note)

    def summary(self) -> Pairs:
        return [("note", self.note or "(none)")]

    def fields(self) -> Pairs:
        return [("note", self.note)] if self.note else []


@dataclass(frozen=True, slots=True)
class Resume:
    name: ClassVar[str] = "resume"

    @classmethod
    def parse(cls, form: FormData) -> Self | Invalid:
        return cls()

    def summary(self) -> Pairs:
        return []

    def fields(self) -> Pairs:
        return []


@dataclass(frozen=True, slots=True)
class Trigger:
    name: ClassVar[str] = "trigger"

    overlap: str

    @classmethod
    def parse(cls, form: FormData) -> Self | Invalid:
        """`overlap`: one of `OVERLAPS` (empty: `allow_all`)."""
        errors: Errors = {}
        overlap = _text(form, "overlap", errors).strip() or "allow_all"
        if errors:
            return Invalid(errors)
        if overlap not in OVERLAPS:
            return Invalid({"overlap": f"choose one of {', '.join(OVERLAPS)}"})
        return cls(overlap)

    def summary(self) -> Pairs:
        return [("if its last run has not ended", OVERLAPS[self.overlap])]

    def fields(self) -> Pairs:
        return [("overlap", self.overlap)]


Action = Pause | Resume | Trigger

#: Every action by the name in its URL.
KINDS: dict[str, Callable[[FormData], Action | Invalid]] = {
    kind.name: kind.parse for kind in get_args(Action)
}
#: The fields beside which the schedule's page shows an action's errors.
FIELDS = {Pause.name: {"note"}, Resume.name: set(), Trigger.name: {"overlap"}}
#: The message the schedule's page shows after an action (`?done=<key>`); a trigger's
#: names what its tick became.
DONE = {
    "pause": "The schedule is paused: no tick fires until it is resumed.",
    "resume": "The schedule is resumed: its next tick is the first after now.",
    "trigger-started": "A tick was started now: its run is the newest tick below.",
    "trigger-skipped": "The tick was skipped: the schedule's last run has not ended.",
    "trigger-buffered": "The tick is buffered: it starts when the schedule's last run ends.",
    "trigger-exists": "A tick at this time is recorded already: nothing was done.",
}


async def perform(request: Request, key: str, action: Action, tenant: str) -> str:
    """The service call of each action; what happened (a key of `DONE`). A refusal raises
    `ServiceError`."""
    schedules = schedules_of(request)
    match action:
        case Pause(note=note):
            await schedules.pause(key, PauseIn(note=note), tenant=tenant)
            return Pause.name
        case Resume():
            await schedules.resume(key, tenant=tenant)
            return Resume.name
        case Trigger(overlap=overlap):
            outcome = await schedules.trigger(key, overlap, tenant=tenant)
            return f"{Trigger.name}-{outcome.outcome}"
        case _:
            assert_never(action)


# --- pages -----------------------------------------------------------------------------


@router.get("", response_class=HTMLResponse)
async def schedules_page(
    request: Request, session: Session, cursor: str | None = None
) -> HTMLResponse:
    error = None
    if cursor and not NAME.fullmatch(cursor):  # (keys only: a NUL is no key)
        error, cursor = "The page's cursor is not a schedule's key: the first page is shown.", None
    found, next_cursor = await schedules_of(request).page(
        scope=await scope_of(request), limit=PAGE_SIZE, after=cursor or None
    )
    context = {
        "schedules": [Card(s) for s in found],
        "cursor": cursor,
        "next_cursor": next_cursor,
        "error": error,
    }
    return await render(request, "schedules.html", context, session=session)


async def detail_context(request: Request, key: str, session: auth.Session) -> dict[str, Any]:
    """Everything schedule.html shows; the action route renders it too, with its errors."""
    tenant = await tenant_of(request)
    schedules = schedules_of(request)
    record, times = await schedules.fire_times(key, tenant=tenant, start=None, count=FIRE_TIMES)
    ticks = await schedules.ticks(key, tenant=tenant, limit=TICKS_SHOWN, before=None)
    card = Card(record)
    return {
        "card": card,
        "fire_times": times,
        "ticks": [(t, card.local(t.scheduled_time)) for t in ticks],
        "can_manage": session.can(Permission.SCHEDULES_MANAGE),
        "overlaps": OVERLAPS,
        "form": {},
        "form_errors": {},
        "error": None,
        "flash": None,
    }


async def _schedule(
    request: Request, key: str, session: auth.Session, status_code: int = 200, **extra: Any
) -> HTMLResponse:
    """The schedule's page (with `extra`: an action's errors), or the error page when the
    schedule is not this tenant's (any more)."""
    try:
        context = await detail_context(request, key, session)
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    context.update(extra)
    return await render(request, "schedule.html", context, status_code=status_code, session=session)


@router.get("/{key}", response_class=HTMLResponse)
async def schedule_page(
    request: Request, key: str, session: Session, done: str | None = None
) -> HTMLResponse:
    if not NAME.fullmatch(key):
        return await error_page(request, f"no schedule with key {key[:64]!r}", 404)
    return await _schedule(request, key, session, flash=DONE.get(done or ""))


@router.post("/{key}/{action}", response_class=HTMLResponse)
async def schedule_action(
    request: Request, key: str, action: str, session: Manager, form: Form
) -> Response:
    parse = KINDS.get(action)
    if parse is None:
        return await error_page(request, "unknown action", 404)
    if not NAME.fullmatch(key):
        return await error_page(request, f"no schedule with key {key[:64]!r}", 404)
    tenant = await tenant_of(request)
    try:
        record = await schedules_of(request).get(key, tenant=tenant)
    except ServiceError as exc:
        return await error_page(request, exc.detail, exc.status)
    parsed = parse(form)
    if isinstance(parsed, Invalid):
        beside = FIELDS[action] if action != Pause.name or not record.paused else set()
        if parsed.errors.keys() <= beside:
            message = "Please correct the form below."
        else:
            listed = (v if k == "form" else f"{k}: {v}" for k, v in parsed.errors.items())
            message = "Nothing was changed: " + "; ".join(listed)
        values = {k: str(v) for k, v in form.items() if k != auth.CSRF_FIELD}
        return await _schedule(
            request,
            key,
            session,
            422,
            error=message,
            form=values,
            form_errors=parsed.errors,
        )
    if form.get("confirmed") != "yes":
        context = {
            "card": Card(record),
            "action": parsed.name,
            "summary": parsed.summary(),
            "fields": parsed.fields(),
        }
        return await render(request, "schedule_confirm.html", context, session=session)
    try:
        done = await perform(request, key, parsed, tenant)
    except ServiceError as exc:
        return await _schedule(request, key, session, exc.status, error=exc.detail)
    return redirect(f"/admin/schedules/{key}?done={done}")
