"""An operator's retry of a run that failed after its model calls' retries were spent
(`app.service.operator_actions.retry_run`): its calls get their whole budget again, the
attempts and the time since the first failure alike."""

from __future__ import annotations

from datetime import timedelta

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.operator_actions import retry_run
from app.settings import Settings
from app.store.runs import RunStore
from tests.compaction.support import run_body
from tests.compaction.test_step_retries import TURNS, EverythingFails, clocked
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer, mock, mock_server

__all__ = ["mock", "mock_server"]


async def test_a_retried_run_backs_off_again_though_its_first_failure_was_long_ago(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    run = await clocked(store, settings, mock, provider_max_attempts=3)
    mock.responder = EverythingFails(Reply.fault(503, "down"), answered=0)
    view, _ = await run.service.create_run(run_body(TURNS, 10**6))  # (never compacted)
    run_id = view.record.id
    for _ in range(3):  # (each attempt fails; the third ends the run)
        status = await run.step(run_id)
        if status is RunStatus.QUEUED:
            await run.wait_out(run_id)
    assert status is RunStatus.FAILED
    run.clock.advance(timedelta(seconds=settings.provider_max_backoff_seconds + 3600))
    retried = await retry_run(run.service, run_id, "operator", Scope.ALL)
    assert (retried.model_attempts, retried.model_retry_since) == (0, None)
    assert await run.step(run_id) is RunStatus.QUEUED  # (attempt 1 of 3 again: backs off)
    reason = await run.wait_out(run_id)
    assert (reason["attempt"], reason["max_attempts"]) == (1, 3)
