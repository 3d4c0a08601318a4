"""A run's conversation page by page (`GET /v1/runs/{id}/messages`): the whole history it
was given or inherited, then its own messages, each in the `history` shape of a create."""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from app.core import AgentRun
from app.core.serde import message_to_dict
from app.service.errors import InvalidRequest


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


def page(run: AgentRun, limit: int, cursor: str | None) -> tuple[list[Entry], str | None]:
    """Up to `limit` messages of the run's conversation, oldest first, from `cursor`;
    and the cursor of the next page (None at the end)."""
    start = decode_cursor(cursor) if cursor else 0
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
