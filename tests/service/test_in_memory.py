"""Submissions decided by the service over the in-memory backend (tests/memory.py):
identical re-sends, conflicting answers and the partial state, without a database."""

from __future__ import annotations

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.errors import ToolResultConflict
from app.service.runs import RunService
from app.service.schemas import ToolResultsIn
from app.store import changes
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import suspended_run
from tests.memory import MemoryBackend


def results(*pairs: tuple[str, str]) -> ToolResultsIn:
    return ToolResultsIn.model_validate(
        {"results": [{"tool_call_id": i, "output": o} for i, o in pairs]}
    )


async def test_a_partial_answer_a_resend_and_a_conflict() -> None:
    store = RunStore(None, backend=MemoryBackend())  # type: ignore[arg-type]
    service = RunService(store, make_settings("sqlite:///in-memory.db"))
    view = await suspended_run(service)
    first, second = view.pending
    partial = await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    assert partial.accepted == [first.call_id] and not partial.resumed
    assert partial.record.status is RunStatus.REQUIRES_ACTION
    again = await service.submit_tool_results(
        results((first.call_id, "3")), run_id=view.record.id, scope=Scope.ALL
    )
    assert again.accepted == [] and again.record.version == partial.record.version
    with pytest.raises(ToolResultConflict):
        await service.submit_tool_results(
            results((first.call_id, "4")), run_id=view.record.id, scope=Scope.ALL
        )
    last = await service.submit_tool_results(
        results((second.call_id, "7")), run_id=view.record.id, scope=Scope.ALL
    )
    assert last.accepted == [second.call_id] and last.resumed
    assert (
        await service.get_run(view.record.id, scope=Scope.ALL)
    ).record.status is RunStatus.QUEUED


async def test_an_operators_retry_needs_no_sql() -> None:
    """A backend without the fold's rollups applies a retry as its compare-and-set alone
    (the SQL backends take the run out of the rollups in the same transaction)."""
    store = RunStore(None, backend=MemoryBackend())  # type: ignore[arg-type]
    service = RunService(store, make_settings("sqlite:///in-memory.db"))
    view = await suspended_run(service)
    now = service.clock.now()
    expired, _ = await store.apply(view.record.id, changes.expire(), now, scope=Scope.ALL)
    assert expired is not None and expired.status is RunStatus.EXPIRED
    retry = changes.retry(expired.version, expired.status, expired.error, "user:op", now)
    retried, _ = await store.apply(view.record.id, retry, now, scope=Scope.ALL)
    assert retried is not None and retried.status is RunStatus.QUEUED
