"""The schedules' operations: create, read, change, pause, resume, delete; a trigger and
a backfill (their ticks started by the firing, `app.schedules.firing`); the times a
schedule would fire. A schedule is written only if its cron, zone and run body pass (the
run's own create checks, nothing written)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

from app.clock import Clock
from app.core.scope import Scope
from app.schedules import plan
from app.schedules.cron import Cron, CronError, parse
from app.schedules.firing import Firer, Outcome, bounds_of
from app.schedules.rows import ScheduleRecord, ScheduleRows, TickRecord
from app.schedules.specs import (
    BackfillIn,
    PauseIn,
    ScheduleFields,
    ScheduleIn,
    SchedulePatch,
    stored,
    window_problem,
)
from app.service.errors import (
    InvalidRequest,
    ScheduleBusy,
    ScheduleExists,
    ScheduleNotFound,
    ServiceError,
)
from app.service.runs import RunService
from app.service.schemas import RunCreate

#: The most ticks one backfill starts, and one fire-times answer lists.
MAX_BACKFILL = 500
MAX_FIRE_TIMES = 1000
#: Attempts at a change that a firing worker keeps moving on (its version).
WRITE_ATTEMPTS = 20
#: Spec fields whose change plans the next tick again.
TIMING = ("cron", "timezone", "start_at", "end_at")


@dataclass(frozen=True, slots=True)
class FireTime:
    utc: datetime
    local: datetime


def schedule_id() -> str:
    return "sch_" + secrets.token_urlsafe(15).replace("-", "a").replace("_", "b")


def checked_cron(spec: dict[str, Any]) -> Cron:
    """The spec's cron in its zone; a 422 naming the field that is wrong."""
    if problem := window_problem(spec):
        raise InvalidRequest(problem)
    try:
        return parse(spec["cron"], spec["timezone"])
    except CronError as exc:
        raise InvalidRequest(str(exc)) from None


class ScheduleService:
    def __init__(
        self,
        runs: RunService,
        rows: ScheduleRows,
        firer: Firer,
        clock: Clock,
        wake: Callable[[], None],
    ) -> None:
        self.runs = runs
        self.rows = rows
        self.firer = firer
        self.clock = clock
        self.wake = wake  # (the workers' firing loops: a schedule changed)

    # --- writes -------------------------------------------------------------------------

    async def create(self, body: ScheduleIn, *, tenant: str, actor: str | None) -> ScheduleRecord:
        spec = stored(body)
        cron = checked_cron(spec)
        await self._vet(body.run, tenant)
        now = self.clock.now()
        sid = schedule_id()
        nxt = None if body.paused else plan.next_tick(cron, now, bounds_of(spec))
        values = {
            "id": sid,
            "tenant_id": tenant,
            "key": body.key,
            "spec": spec,
            "paused": body.paused,
            "note": body.note,
            "next_fire_at": nxt,
            "due_at": plan.due_at(sid, nxt, body.jitter_seconds),
            "buffered_time": None,
            "last_run_id": None,
            "version": 1,
            "created_at": now,
            "created_by": actor,
            "updated_at": now,
        }
        if not await self.rows.insert(values):
            raise ScheduleExists(
                f"a schedule with key {body.key!r} exists: PATCH /v1/schedules/{body.key} "
                "changes it",
                key=body.key,
            )
        self.wake()
        return ScheduleRecord.from_row(values)

    async def update(self, key: str, patch: SchedulePatch, *, tenant: str) -> ScheduleRecord:
        """Change the fields `patch` sets; a change of the timing plans the next tick
        from now (the ticks of the old timing that are due are not fired)."""
        changes = patch.model_dump(mode="json", exclude_unset=True)
        nulls = sorted(
            k for k, v in changes.items() if v is None and k not in ("start_at", "end_at", "note")
        )
        if nulls:
            raise InvalidRequest(f"{nulls[0]}: may not be null (leave it out to keep it)")
        if patch.run is not None:
            await self._vet(patch.run, tenant)
            changes["run"] = patch.run.model_dump(mode="json", exclude_unset=True)
        for _ in range(WRITE_ATTEMPTS):
            record = await self.get(key, tenant=tenant)
            spec = {**record.spec, **{k: v for k, v in changes.items() if k != "note"}}
            try:
                ScheduleFields.model_validate({**spec, "run": spec["run"]})
            except ValueError as exc:
                raise InvalidRequest(_first_error(exc)) from None
            cron = checked_cron(spec)
            values: dict[str, Any] = {"spec": spec, "updated_at": self.clock.now()}
            if "note" in changes:
                values["note"] = changes["note"]
            if not record.paused and any(k in changes for k in (*TIMING, "jitter_seconds")):
                nxt = (
                    plan.next_tick(cron, self.clock.now(), bounds_of(spec))
                    if any(k in changes for k in TIMING)
                    else record.next_fire_at
                )
                values["next_fire_at"] = nxt
                values["due_at"] = plan.due_at(record.id, nxt, spec["jitter_seconds"])
            if await self.rows.update(record.id, record.version, values):
                self.wake()
                return await self.get(key, tenant=tenant)
        raise ScheduleBusy("the schedule kept changing; send the change again")

    async def pause(self, key: str, body: PauseIn, *, tenant: str) -> ScheduleRecord:
        values = {"paused": True, "note": body.note, "next_fire_at": None, "due_at": None}
        return await self._set(key, tenant, values)

    async def resume(self, key: str, *, tenant: str) -> ScheduleRecord:
        """Unpaused: the next tick is the first after now (the paused ones do not fire)."""

        def values(record: ScheduleRecord) -> dict[str, Any]:
            nxt = plan.next_tick(
                checked_cron(record.spec), self.clock.now(), bounds_of(record.spec)
            )
            due = plan.due_at(record.id, nxt, record.spec.get("jitter_seconds") or 0)
            return {"paused": False, "note": None, "next_fire_at": nxt, "due_at": due}

        return await self._set(key, tenant, values)

    async def delete(self, key: str, *, tenant: str) -> None:
        """The schedule and its ticks; the runs it started stay (each names it)."""
        if not await self.rows.delete(tenant, key):
            raise ScheduleNotFound(f"no schedule with key {key!r}")

    async def trigger(self, key: str, overlap: str, *, tenant: str) -> Outcome:
        """One tick now, outside the cron (also while paused)."""
        record = await self.get(key, tenant=tenant)
        (outcome,) = await self.firer.start(record, [self.clock.now()], "trigger", overlap)
        return outcome

    async def backfill(self, key: str, body: BackfillIn, *, tenant: str) -> list[Outcome]:
        """The cron's ticks in [from, to] (a past window), each started under the
        backfill's overlap; a tick with a recorded outcome is left (`exists`)."""
        record = await self.get(key, tenant=tenant)
        if body.end < body.start:
            raise InvalidRequest("to: must not be before from")
        if body.end > self.clock.now():
            raise InvalidRequest("to: a backfill covers a past window (to must not be after now)")
        cron = checked_cron(record.spec)
        # (counted up to the limit only: a minutely cron over years is millions of ticks)
        times = list(islice(cron.between(body.start - plan.TINY, body.end), MAX_BACKFILL + 1))
        if len(times) > MAX_BACKFILL:
            raise InvalidRequest(
                f"from: the window holds more than {MAX_BACKFILL} ticks; backfill it in parts"
            )
        return await self.firer.start(record, times, "backfill", body.overlap)

    # --- reads --------------------------------------------------------------------------

    async def get(self, key: str, *, tenant: str) -> ScheduleRecord:
        found = await self.rows.get(tenant, key)
        if found is None:
            raise ScheduleNotFound(f"no schedule with key {key!r}")
        return found

    async def page(
        self, *, scope: Scope, limit: int, after: str | None
    ) -> tuple[list[ScheduleRecord], str | None]:
        found = await self.rows.page(scope, limit=limit + 1, after=after)
        more = len(found) > limit
        found = found[:limit]
        return found, (found[-1].key if more and found else None)

    async def fire_times(
        self, key: str, *, tenant: str, start: datetime | None, count: int
    ) -> tuple[ScheduleRecord, list[FireTime]]:
        """The next `count` times after `start` (default now) the schedule would fire
        (its bounds applied; jitter is not)."""
        record = await self.get(key, tenant=tenant)
        cron = checked_cron(record.spec)
        bounds = bounds_of(record.spec)
        out: list[FireTime] = []
        at = start or self.clock.now()
        while len(out) < count:
            tick = plan.next_tick(cron, at, bounds)
            if tick is None:
                break
            out.append(FireTime(tick, cron.local(tick)))
            at = tick
        return record, out

    async def ticks(
        self, key: str, *, tenant: str, limit: int, before: datetime | None
    ) -> list[TickRecord]:
        record = await self.get(key, tenant=tenant)
        return await self.rows.ticks(record.id, limit=limit, before=before)

    # --- helpers ------------------------------------------------------------------------

    async def _vet(self, run: RunCreate, tenant: str) -> None:
        """A run could start from it: the create's checks pass (nothing written)."""
        if run.previous_run_id is not None:
            raise InvalidRequest(
                "run.previous_run_id: a schedule starts new runs; continuing a conversation "
                "from a schedule is not supported"
            )
        try:
            await self.runs.prepare(run, tenant=tenant)
        except ServiceError as exc:
            if exc.status >= 500:
                raise
            raise InvalidRequest(f"run: {exc.detail}") from None

    async def _set(
        self,
        key: str,
        tenant: str,
        values: dict[str, Any] | Callable[[ScheduleRecord], dict[str, Any]],
    ) -> ScheduleRecord:
        for _ in range(WRITE_ATTEMPTS):
            record = await self.get(key, tenant=tenant)
            new = values(record) if callable(values) else values
            if await self.rows.update(
                record.id, record.version, {**new, "updated_at": self.clock.now()}
            ):
                self.wake()
                return await self.get(key, tenant=tenant)
        raise ScheduleBusy("the schedule kept changing; send the change again")


def _first_error(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        return f"{where}: {first['msg']}"
    return str(exc)
