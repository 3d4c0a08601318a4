"""A run's place in its conversation, as its configuration records it: the run it
continues (`previous_run_id`) and its conversation's first run (`conversation_id`), which
a create writes and the API and the dashboard show."""

from __future__ import annotations

from app.store.run_records import RunRecord

#: Configuration keys of a continuing run.
PREVIOUS_KEY = "previous_run_id"
CONVERSATION_KEY = "conversation_id"


def conversation_of(record: RunRecord) -> str:
    """The id of the first run of `record`'s conversation (its own id if it continues none)."""
    value = record.config.get(CONVERSATION_KEY)
    return value if isinstance(value, str) else record.id


def previous_of(record: RunRecord) -> str | None:
    value = record.config.get(PREVIOUS_KEY)
    return value if isinstance(value, str) else None
