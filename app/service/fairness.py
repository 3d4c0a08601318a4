"""Whose turn a queued run takes: its fair key (`AGENTRUN_FAIR_SHARE_KEY`). Within one
priority the claim lets fair keys take turns (app.store.transitions.fair_rank), so one
key's backlog does not delay the runs of another queued after it."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

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
