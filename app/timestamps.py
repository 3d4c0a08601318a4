"""One timestamp format for everything the service writes out: RFC 3339 in UTC with `Z`
(`2026-01-02T03:04:05.123456Z`; no fraction when it is zero). API JSON, SSE event
payloads, webhook payloads, timestamps stored inside waiting reasons and events (and so
the dashboard's JSON) all go through `iso`, so a client sees one form everywhere."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import PlainSerializer, WithJsonSchema


def iso(value: datetime) -> str:
    """`value` (naive means UTC) as RFC 3339 in UTC with a `Z`."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


#: A datetime field of an API model, serialized by `iso`.
Timestamp = Annotated[
    datetime,
    PlainSerializer(iso, return_type=str, when_used="json-unless-none"),
    WithJsonSchema({"type": "string", "format": "date-time"}),
]
