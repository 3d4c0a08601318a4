"""A run's compaction policy as the worker reads it from the run's stored configuration
(`compaction`, validated at the edge by `app.service.schemas.CompactionPolicy`), and the
create's trim that leaves it out when unset (a run without one is configured and
hashed as before compaction existed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.service.errors import InvalidRequest

KEY = "compaction"
DEFAULT_KEEP_RECENT_TURNS = 2


@dataclass(frozen=True, slots=True)
class Policy:
    threshold_tokens: int
    model: Mapping[str, Any] | None  # the summarising model's spec (None: the run's own)
    keep_recent_turns: int = DEFAULT_KEEP_RECENT_TURNS
    instructions: str | None = None


def policy_of(config: Mapping[str, Any]) -> Policy | None:
    """The policy of a run's stored configuration; None when it has none."""
    doc = config.get(KEY)
    if not isinstance(doc, Mapping):
        return None
    return Policy(
        int(doc["threshold_tokens"]),
        doc.get("model"),
        int(doc.get("keep_recent_turns") or DEFAULT_KEEP_RECENT_TURNS),
        doc.get("instructions"),
    )


def called_models(config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """(`Hooks.called_models`) The summarising model a configuration's policy names
    (none: the run's own writes its summaries)."""
    doc = config.get(KEY)
    model = doc.get("model") if isinstance(doc, Mapping) else None
    return {f"{KEY}.model": model} if isinstance(model, Mapping) else {}


def without_unset_compaction(request: dict[str, Any]) -> dict[str, Any]:
    """A create request (or configuration) without `compaction` when it is unset, and
    without the policy's options left unset (left out: null as the schema's default)."""
    policy = request.get(KEY)
    if policy is None:
        request.pop(KEY, None)
    elif isinstance(policy, dict):
        request[KEY] = {k: v for k, v in policy.items() if v is not None}
    return request


def check_compaction(agent: Mapping[str, Any]) -> None:
    """A configuration's policy is one the worker reads (the create's schema checked it;
    this guards the configurations a feature builds by hand): else 422."""
    doc = agent.get(KEY)
    if doc is None:
        return
    if not isinstance(doc, Mapping) or type(doc.get("threshold_tokens")) is not int:
        raise InvalidRequest("compaction: an object with an integer threshold_tokens")
