"""What the client's schedules share and that does no IO: the words of their policies,
the fields of a create and a change, their bodies and query parameters (times as RFC 3339
text), and the path of one (its key checked first)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, TypedDict, get_args

from agentrun_client._agents import AGENT_NAME
from agentrun_client._base import tool_definitions
from agentrun_client.errors import InvalidInput

#: What a tick does while the schedule's last run has not ended (the service's words;
#: tests/client/test_vocabulary.py checks them): `skip` it, `buffer_one` (start it when
#: that run ends; one is kept), `allow_all` (start it anyway), `cancel_other` (cancel
#: that run, then start it).
Overlap = Literal["skip", "buffer_one", "allow_all", "cancel_other"]
#: What becomes of the ticks missed while no worker ran: `skip` (none fires), `latest`
#: (the newest one fires), `all` (each fires, oldest first), within the catch-up window.
Catchup = Literal["skip", "latest", "all"]
OVERLAPS: tuple[str, ...] = get_args(Overlap)
CATCHUPS: tuple[str, ...] = get_args(Catchup)

#: A time the client sends: an aware datetime, or RFC 3339 text as it is.
Instant = datetime | str


class ScheduleFields(TypedDict, total=False):
    """The optional fields of a new schedule (`client.schedules.create`; docs/client.md,
    *Schedules*): `timezone` (IANA, default UTC) the cron is read in; `overlap` (default
    `skip`); `catchup` (default `latest`) and `catchup_window_seconds` (default a day);
    `jitter_seconds` (each tick fires up to this late); `start_at` / `end_at` (no tick
    before / after; aware datetimes or RFC 3339 text); `paused` and its `note`."""

    timezone: str
    overlap: Overlap
    catchup: Catchup
    catchup_window_seconds: int
    jitter_seconds: int
    start_at: Instant
    end_at: Instant
    paused: bool
    note: str


class ScheduleChanges(TypedDict, total=False):
    """The fields `client.schedules.update` changes: each one given is sent, the others
    are kept. None clears `start_at`, `end_at` and `note` (no other field may be null). A
    change of `cron`, `timezone`, `start_at` or `end_at` plans the next tick from now;
    `run` replaces the run body whole."""

    cron: str
    run: Mapping[str, Any]
    timezone: str
    overlap: Overlap
    catchup: Catchup
    catchup_window_seconds: int
    jitter_seconds: int
    start_at: Instant | None
    end_at: Instant | None
    note: str | None


def schedule_path(key: str, suffix: str = "") -> str:
    """`/v1/schedules/{key}…`; `InvalidInput` for a key the service would refuse (it is
    part of the URL)."""
    if not isinstance(key, str) or not re.fullmatch(AGENT_NAME, key):
        raise InvalidInput(
            f"not a schedule key: {key!r} (1-64 of letters, digits, `_` and `-`, "
            "a letter or digit first)"
        )
    return f"/v1/schedules/{key}{suffix}"


def instant(value: Instant, name: str) -> str:
    """`value` as RFC 3339 text: an aware datetime's `isoformat()`, text as it is (the
    service checks it); a naive datetime is `InvalidInput`."""
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidInput(f"{name} must be timezone-aware, not {value!r}")
        return value.isoformat()
    return str(value)


def run_body(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run a schedule's ticks start: a run's create body (`prompt` with `agent`, or
    `model`, `tools`, ...), as `runs.create` sends it: `tools` as definitions (a
    `ToolRegistry` too), a `webhook` URL as `{"url": …}`, None left out."""
    if not isinstance(run, Mapping):
        raise InvalidInput(f"run must be a mapping (a run's create body), not {run!r}")
    body: dict[str, Any] = {}
    for name, value in run.items():
        if value is None:
            continue
        if name == "tools":
            value = tool_definitions(value)
        elif name == "webhook" and isinstance(value, str):
            value = {"url": value}
        body[name] = value
    return body


def _fields(fields: Mapping[str, Any], *, keep_none: bool) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for name, value in fields.items():
        if value is None:
            if keep_none:
                body[name] = None
            continue
        if name in ("start_at", "end_at"):
            value = instant(value, name)
        elif name == "run":
            value = run_body(value)
        body[name] = value
    return body


def create_body(
    key: str, cron: str, run: Mapping[str, Any], fields: Mapping[str, Any]
) -> dict[str, Any]:
    """The body of `POST /v1/schedules`: the fields given (None leaves one out)."""
    schedule_path(key)  # (`InvalidInput` for a key the service would refuse)
    return {"key": key, "cron": cron, "run": run_body(run), **_fields(fields, keep_none=False)}


def patch_body(changes: Mapping[str, Any]) -> dict[str, Any]:
    """The body of `PATCH /v1/schedules/{key}`: every field given, None included."""
    return _fields(changes, keep_none=True)


def backfill_body(from_: Instant, to: Instant, overlap: Overlap | None) -> dict[str, Any]:
    body = {"from": instant(from_, "from_"), "to": instant(to, "to")}
    return body if overlap is None else {**body, "overlap": overlap}


def fire_times_params(from_: Instant | None, count: int) -> dict[str, Any]:
    params: dict[str, Any] = {"count": count}
    if from_ is not None:
        params["from"] = instant(from_, "from_")
    return params


def ticks_params(limit: int, before: Instant | None) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": limit}
    if before is not None:
        params["before"] = instant(before, "before")
    return params
