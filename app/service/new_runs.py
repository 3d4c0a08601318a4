"""A new run before it is written: its id, its request as the idempotency hash covers it,
and what `RunService.prepare` builds of it (a create's, or a child run's that a
suspension writes in its own transaction)."""

from __future__ import annotations

import secrets
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.service.schemas import RunCreate
from app.store.hooks import Continuation, Continuing
from app.store.run_records import SpawnedRun
from app.store.runs import RunStore


@dataclass(frozen=True, slots=True)
class Prepared:
    """A new run checked and built, not written (`RunService.prepare`)."""

    run: SpawnedRun  # its columns, configuration and metadata, first event and log
    now: datetime  # its creation time
    continuing: Continuing | None = None  # the run it continues, as asked
    before: Continuation | None = None  # what it continues

    @property
    def values(self) -> Mapping[str, Any]:
        return self.run.values


def hooks_trimmed(store: RunStore, body: RunCreate) -> dict[str, Any]:
    """A create's request as its idempotency hash covers it: without the options it
    leaves unset (the features' trims; a default that did not always exist)."""
    request = store.hooks.trim(without_unset_queues(body.model_dump(mode="json")))
    added_later = (("if_busy", "reject"), ("priority", 0), ("agent", None), ("output_schema", None))
    for added, default in added_later:
        if added in request and request[added] == default:  # (hashed as before it existed)
            request.pop(added)
    return request


#: The symbols of a run id's random part: letters and digits only, so an id never starts
#: (after `run_`) with `_` or `-`, which command lines and URLs take for something else.
#: (Tool-call ids keep the core's `mint_id`, upstream's 64-symbol alphabet.)
RUN_ID_ALPHABET = string.ascii_letters + string.digits
RUN_ID_LENGTH = 21  # as mint_id: log2(62) * 21 ≈ 125 bits


def run_id(random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> str:
    """`run_` and 21 uniformly random letters or digits (bytes at or above 248 = 4 * 62
    are dropped, so `byte % 62` is uniform)."""
    out: list[str] = []
    while len(out) < RUN_ID_LENGTH:
        for b in random_bytes(32):
            if b < 248:
                out.append(RUN_ID_ALPHABET[b % 62])
                if len(out) == RUN_ID_LENGTH:
                    break
    return "run_" + "".join(out)


def without_unset_queues(request: dict[str, Any]) -> dict[str, Any]:
    """A create request without the queue options it does not use, so runs that use no
    queue are configured (and hashed for idempotency) as they were before queues."""
    if request.get("tool_queue") is None:
        request.pop("tool_queue", None)
    for tool in request.get("tools") or ():
        for option in ("queue", "agent"):  # (nor the agent of a tool that is not an agent's)
            if tool.get(option) is None:
                tool.pop(option, None)
    return request
