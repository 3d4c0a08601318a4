"""`AsyncSchedules`, runs the clock starts; `_sync_schedules.py` (`Schedules`) is generated
from this file with `_sync.py` (`make sync-client`): edit this one, then regenerate."""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Mapping
from typing import Any, Unpack

from agentrun_client import _base, _schedules
from agentrun_client._async_approvals import AsyncRequester
from agentrun_client._base import Call
from agentrun_client._schedules import Instant, Overlap, ScheduleChanges, ScheduleFields
from agentrun_client.models import (
    FireTimeList,
    Schedule,
    SchedulePage,
    ScheduleTick,
    ScheduleTickPage,
    TickOutcome,
    TickOutcomeList,
)


class AsyncSchedules:
    """`/v1/schedules`: runs started by the clock. Each tick of a schedule's `cron` (in its
    `timezone`) starts the run its `run` body describes, exactly once across the
    service's workers; `overlap` says what a tick does while the schedule's last run has
    not ended, `catchup` what becomes of the ticks missed while no worker ran. Each run a
    schedule started names it (`Run.schedule`). Reads need `runs:read`; writes
    `schedules:manage` (else `Forbidden`)."""

    def __init__(self, client: AsyncRequester) -> None:
        self._client = client

    async def _json(self, call: Call) -> Any:
        response = await self._client.request(call)
        return response.json()

    async def _schedule(self, call: Call) -> Schedule:
        return Schedule.model_validate(await self._json(call))

    async def create(
        self,
        key: str,
        cron: str,
        run: Mapping[str, Any],
        **fields: Unpack[ScheduleFields],
    ) -> Schedule:
        """A new schedule: `cron` (5 fields, or `@daily`, `@hourly`, ...) read in
        `timezone` (default UTC), each tick starting `run` (a run's create body, e.g.
        `{"agent": "reporter", "prompt": "…"}`). `Conflict` `schedule-exists` when the key
        is taken (`update`); `ValidationError` for a cron, zone or run body the service
        refuses (nothing is written)."""
        body = _schedules.create_body(key, cron, run, fields)
        return await self._schedule(Call("POST", "/v1/schedules", json=body))

    async def get(self, key: str) -> Schedule:
        """The schedule (`NotFound` `schedule-not-found`)."""
        return await self._schedule(Call("GET", _schedules.schedule_path(key), safe=True))

    async def list_page(self, *, limit: int = 20, cursor: str | None = None) -> SchedulePage:
        """One page of the tenant's schedules, by key."""
        call = Call("GET", "/v1/schedules", _base.page_params(limit, cursor), safe=True)
        return SchedulePage.model_validate(await self._json(call))

    async def list(self, *, page_size: int = 100) -> AsyncIterator[Schedule]:
        """Every schedule, by key, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = await self.list_page(limit=page_size, cursor=cursor)
            for schedule in page.data:
                yield schedule
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def update(self, key: str, **changes: Unpack[ScheduleChanges]) -> Schedule:
        """Change the fields given (the others are kept; None clears `start_at`, `end_at`,
        `note`); a change of `cron`, `timezone`, `start_at` or `end_at` plans the next tick
        from now. The runs started already are unchanged. Retried safely (the same change
        again is the same schedule)."""
        body = _schedules.patch_body(changes)
        call = Call("PATCH", _schedules.schedule_path(key), json=body, safe=True)
        return await self._schedule(call)

    async def delete(self, key: str) -> None:
        """The schedule and its ticks; the runs it started stay (each names it)."""
        await self._client.request(Call("DELETE", _schedules.schedule_path(key)))

    async def pause(self, key: str, note: str | None = None) -> Schedule:
        """No tick fires until `resume` (a trigger or a backfill still starts runs); `note`
        says why. Retried safely."""
        body = None if note is None else {"note": note}
        call = Call("POST", _schedules.schedule_path(key, "/pause"), json=body, safe=True)
        return await self._schedule(call)

    async def resume(self, key: str) -> Schedule:
        """Unpaused: its next tick is the first after now (the ticks of the pause do not
        fire). Retried safely."""
        call = Call("POST", _schedules.schedule_path(key, "/resume"), safe=True)
        return await self._schedule(call)

    async def trigger(self, key: str, *, overlap: Overlap | None = None) -> TickOutcome:
        """A tick now, outside the cron (also while paused): its run starts unless
        `overlap` (default `allow_all`: start anyway) says otherwise while the schedule's
        last run has not ended. Not retried once it may have been processed (each trigger
        is a tick of its own)."""
        body = None if overlap is None else {"overlap": overlap}
        call = Call("POST", _schedules.schedule_path(key, "/trigger"), json=body)
        return TickOutcome.model_validate(await self._json(call))

    async def backfill(
        self, key: str, from_: Instant, to: Instant, *, overlap: Overlap | None = None
    ) -> builtins.list[TickOutcome]:
        """Start the cron's ticks of a past window (`from_` ≤ tick ≤ `to` ≤ now; aware
        datetimes or RFC 3339 text), oldest first, each under `overlap` (default
        `allow_all`); a tick that has an outcome already is left (`exists`), so a
        backfill is retried safely. At most 500 ticks (`ValidationError`: in parts)."""
        body = _schedules.backfill_body(from_, to, overlap)
        call = Call("POST", _schedules.schedule_path(key, "/backfill"), json=body, safe=True)
        return TickOutcomeList.model_validate(await self._json(call)).data

    async def fire_times(
        self, key: str, *, from_: Instant | None = None, count: int = 10
    ) -> FireTimeList:
        """The next `count` (at most 1000) times after `from_` (default now) the schedule
        would fire, each in UTC and in its zone (its `start_at` / `end_at` applied, its
        jitter not)."""
        params = _schedules.fire_times_params(from_, count)
        call = Call("GET", _schedules.schedule_path(key, "/fire-times"), params, safe=True)
        return FireTimeList.model_validate(await self._json(call))

    async def ticks_page(
        self, key: str, *, limit: int = 50, before: Instant | None = None
    ) -> ScheduleTickPage:
        """One page of what the schedule's ticks became, newest first; `next_cursor` is
        the `before` of the next (older) page."""
        params = _schedules.ticks_params(limit, before)
        call = Call("GET", _schedules.schedule_path(key, "/ticks"), params, safe=True)
        return ScheduleTickPage.model_validate(await self._json(call))

    async def ticks(self, key: str, *, page_size: int = 200) -> AsyncIterator[ScheduleTick]:
        """Every recorded tick of the schedule, newest first, fetching pages as the
        iteration goes."""
        before: str | None = None
        while True:
            page = await self.ticks_page(key, limit=page_size, before=before)
            for tick in page.data:
                yield tick
            if page.next_cursor is None:
                return
            before = page.next_cursor
