"""A run's log read as messages (`GET /v1/runs/{id}/log`): every message each batch of
its log wrote, in order, marked with the batch. After a compaction the conversation
(`GET /v1/runs/{id}/messages`) holds a summary in place of the older turns; their
originals stay in the batches written before it (and in the compaction's own batch,
first, for those the run added since the batch before it: `app.core.stored.appended`),
and the compaction's batch then restates the conversation it left (`replaces`): its
kept messages, the summary and the recent turns."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from app.core import stored
from app.core.errors import StateDecodeError
from app.core.serde import dumps, message_to_dict
from app.service.messages import decode_cursor, encode_cursor, history_shape


@dataclass(frozen=True, slots=True)
class LogEntry:
    index: int  # position among every message of the log, from 0
    batch: int  # the batch's number (1: the run's creation)
    from_history: bool  # a given history's message (the batch's `h`), not the run's own
    replaces: bool  # its batch replaced the conversation so far (a compaction's)
    message: dict[str, Any]  # the `history` shape of POST /v1/runs


def entries(state: str, log: str | None) -> list[LogEntry]:
    """Every message of a run's log (`log`: its batches as one JSON array text); a run
    stored whole (before the log existed) as one batch of its conversation."""
    try:
        batches = orjson.loads(log) if log else []
    except orjson.JSONDecodeError as exc:
        raise StateDecodeError(f"run log is not valid JSON: {exc}") from None
    if not isinstance(batches, list):
        raise StateDecodeError("run log: not an array of batches")
    out: list[LogEntry] = []
    if not batches:  # (a legacy whole document: its conversation as it is)
        run = stored.load(state).run
        given = len(run.full_history()) - len(run.messages())
        for i, message in enumerate(run.full_history()):
            out.append(LogEntry(i, 1, i < given, False, history_shape(message_to_dict(message))))
        return out
    for seq, batch in enumerate(batches, 1):
        body = dumps(batch)
        history, messages = stored.batch_messages(body)
        replaces = stored.resets(body)
        rows = [
            *((False, False, m) for m in stored.appended(body)),
            *((True, replaces, m) for m in history),
            *((False, replaces, m) for m in messages),
        ]
        for from_history, replacing, message in rows:
            shape = history_shape(message_to_dict(message))
            out.append(LogEntry(len(out), seq, from_history, replacing, shape))
    return out


def page(
    all_entries: list[LogEntry], limit: int, cursor: str | None
) -> tuple[list[LogEntry], str | None]:
    """Up to `limit` entries from `cursor` (the messages page's cursors), and the next
    page's cursor (None at the end)."""
    start = decode_cursor(cursor) if cursor else 0
    end = min(start + limit, len(all_entries))
    return all_entries[start:end], (encode_cursor(end) if end < len(all_entries) else None)
