"""Whose turn a queued run takes: its fair key (`AGENTRUN_FAIR_SHARE_KEY`). Within one
priority the claim lets fair keys take turns (app.store.sql.runs.fair_rank), so one
key's backlog does not delay the runs of another queued after it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from app.store.run_records import RunRecord
from app.store.runs import RunStore

#: A fair key's longest stored form (`runs.fair_key`); a longer one is hashed.
MAX_KEY = 300


def fair_key(setting: str, tenant: str, conversation: str, metadata: Mapping[str, Any]) -> str:
    """The run's fair key: its tenant (`tenant`), or the tenant and its conversation
    (`conversation`: the id of the conversation's first run) or the value of one metadata
    key (`metadata:<key>`; a run without that key shares its tenant's plain turn)."""
    if setting == "tenant":
        return tenant
    if setting == "conversation":
        part = conversation
    else:
        value = metadata.get(setting.removeprefix("metadata:"))
        if value is None:
            return tenant
        part = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    key = f"{tenant}/{part}"
    if len(key) > MAX_KEY:
        key = f"{tenant}/#" + hashlib.sha256(part.encode()).hexdigest()
    return key[:MAX_KEY]


async def queue_spot(store: RunStore, record: RunRecord, now: datetime) -> dict[str, Any]:
    """A queued run's place (the run object's `queue`): `position`, how many due runs the
    claim takes before it (0: the next), `ahead_higher_priority` of those, and `reason`,
    why it waits: `not_due` (its `available_at` is later: a retry's backoff, a shared
    limit; `waiting_reason` says which), `higher_priority`, `fair_share` (runs of its
    priority whose turn comes first), or `next`."""
    ahead, higher = await store.queue_ahead(record, now)
    if record.available_at > now:
        reason = "not_due"
    elif ahead == 0:
        reason = "next"
    elif higher == ahead:
        reason = "higher_priority"
    else:
        reason = "fair_share"
    return {
        "position": ahead,
        "ahead_higher_priority": higher,
        "reason": reason,
        "available_at": record.available_at.isoformat(),
    }
