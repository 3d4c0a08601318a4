"""Conversations: a run that continues a finished one, and a run's conversation in pages.

A conversation is a chain of runs: each continuing run copies the whole conversation of
the run it continues into its own history (so it stands alone: the earlier run may be
deleted by retention later), records `previous_run_id` and `conversation_id` (the first
run's id) in its configuration, and the earlier run gets a `run.continued` event naming
it (so the dashboard links both ways without another table).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.core import Message, stored
from app.core.lifecycle import RunStatus
from app.core.serde import message_to_dict
from app.service.errors import InvalidRequest, RunNotFound, RunStateConflict
from app.service.schemas import INHERITED, RunCreate
from app.store.records import RunRecord

#: Configuration keys of a continuing run.
PREVIOUS_KEY = "previous_run_id"
CONVERSATION_KEY = "conversation_id"


@dataclass(frozen=True, slots=True)
class Continuation:
    """What a new run takes from the completed run it continues."""

    previous_id: str
    conversation_id: str
    history: tuple[Message, ...]
    config: Mapping[str, Any]


def continuation(record: RunRecord | None, previous_id: str) -> Continuation:
    """The continuation of `record` (read with its log); 404 when there is none, 409 with
    its status unless it completed."""
    if record is None:
        raise RunNotFound(f"no run with id {previous_id} (previous_run_id)")
    if record.status != RunStatus.COMPLETED:
        raise RunStateConflict(
            f"run {previous_id} is {record.status.value}: only a completed run can be continued",
            record.status.value,
        )
    run = stored.load(record.state, record.log).run
    return Continuation(record.id, conversation_of(record), run.full_history(), dict(record.config))


def conversation_of(record: RunRecord) -> str:
    """The id of the first run of `record`'s conversation (its own id if it continues none)."""
    value = record.config.get(CONVERSATION_KEY)
    return value if isinstance(value, str) else record.id


def previous_of(record: RunRecord) -> str | None:
    value = record.config.get(PREVIOUS_KEY)
    return value if isinstance(value, str) else None


def agent_settings(body: RunCreate, before: Continuation | None) -> dict[str, Any]:
    """The inherited fields (`INHERITED`) as the run's configuration stores them: the
    body's where it sets them (or there is no earlier run), else the earlier run's."""
    request = body.model_dump(mode="json", include=set(INHERITED))
    if before is None:
        return request
    return {
        name: request[name] if name in body.model_fields_set else before.config.get(name)
        for name in INHERITED
    }


# --- a run's conversation, page by page -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    index: int  # position in the conversation, from 0
    from_history: bool  # given as history (or inherited from an earlier run), not this run's
    message: dict[str, Any]  # the `history` shape of POST /v1/runs


def encode_cursor(index: int) -> str:
    return base64.urlsafe_b64encode(f"m{index}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidRequest("cursor is malformed") from None
    digits = raw[1:]
    if raw[:1] != "m" or not (digits.isascii() and digits.isdigit()) or len(digits) > 10:
        raise InvalidRequest("cursor is malformed")
    return int(digits)


def page(record: RunRecord, limit: int, cursor: str | None) -> tuple[list[Entry], str | None]:
    """Up to `limit` messages of the run's conversation (read with its log), oldest first,
    from `cursor`; and the cursor of the next page (None at the end)."""
    start = decode_cursor(cursor) if cursor else 0
    run = stored.load(record.state, record.log).run
    messages = run.full_history()
    given = len(messages) - len(run.messages())
    end = min(start + limit, len(messages))
    entries = [
        Entry(i, i < given, history_shape(message_to_dict(messages[i]))) for i in range(start, end)
    ]
    return entries, (encode_cursor(end) if end < len(messages) else None)


def history_shape(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored message as `history` accepts it: role, content and (assistant) id."""
    out = {"role": doc["role"], "content": doc["content"]}
    if doc["role"] == "assistant":
        out["id"] = doc.get("id")
    return out
