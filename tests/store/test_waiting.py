"""A waiting reason is typed where it is written and read back typed: `parse` is the
inverse of `doc` (the JSON the API shows), for every kind of reason."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store import waiting
from app.store.runs import RunStore
from app.store.waiting import Backoff, ModelCall, Queued, Resolution, ToolResults, Waiting
from tests.helpers import run_body, suspended_run

UNTIL = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)

REASONS: list[Waiting] = [
    Queued(),
    ModelCall("worker-1", UNTIL),
    ToolResults(3, ("call_a", "call_b")),
    Resolution("lookup", None, '{"q": 1}'),
    Resolution("lookup", "call_c", ""),
    Backoff(UNTIL, 1.5, "exponential", 2, 5, {"type": "provider_error", "status": 503}),
    Backoff(
        UNTIL.replace(microsecond=0),
        30.0,
        "retry_after",
        1,
        5,
        {"type": "rate_limited", "status": 429},
        hint_seconds=30.0,
        header="retry-after",
    ),
]


@pytest.mark.parametrize("reason", REASONS, ids=lambda r: type(r).__name__)
def test_a_reason_reads_back_as_it_was_written(reason: Waiting) -> None:
    doc = reason.doc()
    assert waiting.parse(doc) == reason
    assert waiting.parse(doc).doc() == doc


def test_an_unknown_reason_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown waiting reason"):
        waiting.parse({"type": "no-such-reason"})


async def test_a_run_reads_back_its_reason_and_round_typed(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    view = await suspended_run(service)
    queued, _ = await service.create_run(run_body())
    assert queued.record.waiting == Queued() and queued.record.waiting_round is None
    await service.cancel(
        queued.record.id, scope=Scope.ALL
    )  # (nothing left due for other tests' workers)
    record = await store.get(view.record.id, scope=Scope.ALL)
    assert record is not None and record.status is RunStatus.REQUIRES_ACTION
    assert isinstance(record.waiting, ToolResults)
    assert record.waiting_round == record.waiting.round == view.pending[0].round
    assert record.waiting_reason == {
        "type": "tool_results",
        "round": record.waiting_round,
        "call_ids": [c.call_id for c in view.pending],
    }
