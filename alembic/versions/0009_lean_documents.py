"""lean stored documents: zero usage counters and derivable waiting reasons left out

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30 20:30:00

No table changes. From this release a control document and a log batch leave out a usage
object's zero counters and a tool call's null fields (`app.core.stored`), and a queued
or claimed run's `waiting_reason` is not stored (`app.store.waiting.derived_reason`: the
status and the lease give it back), nor a zero counter of a run's billed usage
(`runs.usage`, filled in on read). Documents written before load as they are, so the
upgrade has nothing to move. The downgrade writes the counters and the reasons back, so
that the previous release (which requires every counter) loads every run; a null field
of a call needs nothing (absent reads as null in every release).
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import orjson
import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BATCH = 500
# The usage counters as this revision knows them (app.core.types.USAGE_FIELDS).
COUNTERS = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "cache_creation_input_tokens",
    "tool_use_prompt_tokens",
    "reasoning_tokens",
)

# A run's billed usage as this revision knows it (app.store.run_records.RUN_USAGE_KEYS).
BILLED = (
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cached_input_tokens",
    "reasoning_tokens",
)

runs = sa.table(
    "runs",
    sa.column("id", sa.String),
    sa.column("state", sa.Text),
    sa.column("status", sa.String),
    sa.column("lease_owner", sa.String),
    sa.column("lease_expires_at", sa.DateTime(timezone=True)),
    sa.column("waiting_reason", sa.JSON),
    sa.column("usage", sa.JSON),
)
run_messages = sa.table(
    "run_messages",
    sa.column("run_id", sa.String),
    sa.column("seq", sa.Integer),
    sa.column("body", sa.Text),
)


def upgrade() -> None:
    pass


def _full(holder: object) -> None:
    usage = holder.get("usage") if isinstance(holder, dict) else None
    if isinstance(usage, dict):
        for key in COUNTERS:
            usage.setdefault(key, 0)


def _full_calls(calls: object) -> None:
    for call in calls if isinstance(calls, list) else ():
        _full(call)


def _control(state: str) -> str:
    doc = orjson.loads(state)
    if not isinstance(doc, dict) or "log" not in doc:
        return state
    _full(doc)
    body = doc.get("state")
    done = body.get("Done") if isinstance(body, dict) else None
    if isinstance(done, dict):
        _full(done)
        _full_calls(done.get("completion_calls"))
    return orjson.dumps(doc).decode()


def _iso(value: datetime) -> str:
    value = value if value.tzinfo else value.replace(tzinfo=UTC)
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def _reason(status: str, owner: str | None, until: datetime | None) -> dict | None:
    if status == "queued":
        return {"type": "queued"}
    if status == "running" and owner is not None and until is not None:
        return {"type": "model_call", "worker": owner, "lease_until": _iso(until)}
    return None


def downgrade() -> None:
    conn = op.get_bind()
    after = ""
    while True:
        rows = conn.execute(
            sa.select(
                runs.c.id,
                runs.c.state,
                runs.c.status,
                runs.c.lease_owner,
                runs.c.lease_expires_at,
                runs.c.waiting_reason,
                runs.c.usage,
            )
            .where(runs.c.id > after)
            .order_by(runs.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            break
        for run_id, state, status, owner, until, reason, usage in rows:
            values: dict = {}
            control = _control(state)
            if control != state:
                values["state"] = control
            if reason is None and (derived := _reason(status, owner, until)) is not None:
                values["waiting_reason"] = derived
            if isinstance(usage, dict) and not set(BILLED) <= usage.keys():
                values["usage"] = {**dict.fromkeys(BILLED, 0), **usage}
            if values:
                conn.execute(runs.update().where(runs.c.id == run_id).values(**values))
        after = rows[-1][0]
    last = ("", 0)
    while True:
        key = sa.tuple_(run_messages.c.run_id, run_messages.c.seq)
        batches = conn.execute(
            sa.select(run_messages.c.run_id, run_messages.c.seq, run_messages.c.body)
            .where(key > sa.tuple_(sa.literal(last[0]), sa.literal(last[1])))
            .order_by(run_messages.c.run_id, run_messages.c.seq)
            .limit(BATCH)
        ).all()
        if not batches:
            return
        for run_id, seq, body in batches:
            doc = orjson.loads(body)
            _full_calls(doc.get("c") if isinstance(doc, dict) else None)
            full = orjson.dumps(doc).decode()
            if full != body:
                conn.execute(
                    run_messages.update()
                    .where(run_messages.c.run_id == run_id, run_messages.c.seq == seq)
                    .values(body=full)
                )
        last = (batches[-1][0], batches[-1][1])
