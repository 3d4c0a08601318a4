"""A schedule's body (`POST /v1/schedules`, `PATCH /v1/schedules/{key}`) and its parts'
requests (trigger, backfill): the shapes pydantic checks; what needs the cron parser or
the run's own create checks is checked by the service (`app.schedules.service`)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from app.service.schemas import AGENT_NAME, RunCreate

Overlap = Literal["skip", "buffer_one", "allow_all", "cancel_other"]
Catchup = Literal["skip", "latest", "all"]

#: The largest catch-up window and jitter (a year; a day).
MAX_WINDOW = 366 * 86400
MAX_JITTER = 86400

OVERLAP_DOC = (
    "when a tick comes while the schedule's last run has not ended: `skip` (the tick is "
    "recorded skipped), `buffer_one` (it starts when that run ends; one tick is kept, "
    "later ones are skipped), `allow_all` (it starts anyway), `cancel_other` (that run is "
    "cancelled, then this one starts)"
)
CATCHUP_DOC = (
    "ticks missed while no worker ran (more than 60 s late): `skip` (none fires), "
    "`latest` (the newest one within the window fires), `all` (every one within the "
    "window fires, oldest first); ticks older than `catchup_window_seconds` never fire"
)


class ScheduleFields(BaseModel):
    """What a schedule's create sets and a patch may change (unset: unchanged)."""

    model_config = ConfigDict(extra="forbid")

    cron: str = Field(
        min_length=1,
        max_length=200,
        description="5 fields (minute hour day-of-month month day-of-week; `L` is a "
        "month's last day) or @yearly, @monthly, @weekly, @daily, @hourly",
        examples=["0 6 * * 1-5"],
    )
    timezone: str = Field(
        default="UTC",
        min_length=1,
        max_length=64,
        description="the IANA zone the expression is read in (DST: a time in a skipped "
        "hour fires once after the jump; in a repeated hour, once)",
        examples=["Europe/Berlin"],
    )
    run: RunCreate = Field(
        description="the run each tick starts: a run's create body (an `agent` with a "
        "prompt, or inline fields), without `previous_run_id`"
    )
    overlap: Overlap = Field(default="skip", description=OVERLAP_DOC)
    catchup: Catchup = Field(default="latest", description=CATCHUP_DOC)
    catchup_window_seconds: int = Field(default=86400, ge=1, le=MAX_WINDOW)
    jitter_seconds: int = Field(
        default=0,
        ge=0,
        le=MAX_JITTER,
        description="each tick fires up to this many seconds late (the same delay on "
        "every worker); its scheduled time is unchanged",
    )
    start_at: AwareDatetime | None = Field(default=None, description="no tick before it")
    end_at: AwareDatetime | None = Field(default=None, description="no tick after it")
    paused: bool = False
    note: str | None = Field(default=None, max_length=2000, description="why it is paused")


class ScheduleIn(ScheduleFields):
    """A new schedule of the caller's tenant."""

    key: str = Field(pattern=AGENT_NAME, description="unique in the tenant; part of URLs")


class SchedulePatch(BaseModel):
    """The fields to change; a change of `cron`, `timezone`, `start_at` or `end_at`
    plans the next tick again from now."""

    model_config = ConfigDict(extra="forbid")

    cron: str | None = Field(default=None, min_length=1, max_length=200)
    timezone: str | None = Field(default=None, min_length=1, max_length=64)
    run: RunCreate | None = None
    overlap: Overlap | None = None
    catchup: Catchup | None = None
    catchup_window_seconds: int | None = Field(default=None, ge=1, le=MAX_WINDOW)
    jitter_seconds: int | None = Field(default=None, ge=0, le=MAX_JITTER)
    start_at: AwareDatetime | None = None
    end_at: AwareDatetime | None = None
    note: str | None = Field(default=None, max_length=2000)


class PauseIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    note: str | None = Field(default=None, max_length=2000, description="why")


class TriggerIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    overlap: Overlap = Field(
        default="allow_all",
        description="if the schedule's last run has not ended (default: start anyway)",
    )


class BackfillIn(BaseModel):
    """The ticks of a past window (`from` ≤ tick ≤ `to`), each started as it would have
    been; a tick that has a recorded outcome already is left as it is."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    start: AwareDatetime = Field(alias="from")
    end: AwareDatetime = Field(alias="to")
    overlap: Overlap = Field(default="allow_all", description=OVERLAP_DOC)


def window_problem(spec: dict[str, Any]) -> str | None:
    """The rule between `start_at` and `end_at` (an `invalid-request`: JSON Schema cannot
    state it)."""
    start, end = when(spec.get("start_at")), when(spec.get("end_at"))
    if start is not None and end is not None and end <= start:
        return "end_at: must be after start_at"
    return None


def stored(body: ScheduleFields) -> dict[str, Any]:
    """The spec a schedule keeps: every field, `run` as its body set it."""
    doc = body.model_dump(mode="json", exclude={"run", "key", "paused", "note"})
    doc["run"] = body.run.model_dump(mode="json", exclude_unset=True)
    return doc


def run_of(spec: dict[str, Any]) -> RunCreate:
    return RunCreate.model_validate(spec["run"])


def when(value: Any) -> datetime | None:
    """A stored spec's time (RFC 3339), as an aware datetime."""
    return None if value is None else datetime.fromisoformat(value)
