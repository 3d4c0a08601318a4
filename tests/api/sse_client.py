"""A minimal server-sent-events reader for the tests (id, event, data per message)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx


def read_events(response: httpx.Response) -> Iterator[dict[str, Any]]:
    message: dict[str, Any] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in message:
                yield {
                    # (a run's stream: the `seq`; a tree's: its cursor, kept as text)
                    "id": int(i) if (i := message["id"]).isdigit() else i,
                    "event": message["event"],
                    **json.loads(message["data"]),
                }
            message = {}
        elif line.startswith(":"):
            continue  # comment / heartbeat
        else:
            field, _, value = line.partition(":")
            message[field] = value.removeprefix(" ")
