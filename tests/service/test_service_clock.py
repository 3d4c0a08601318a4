"""The code moved out of runs.py (conversations.BusyConversations,
tool_results.ToolResults): they read the service's clock as the methods of RunService
did, at the time of the call, not the clock the service was built with."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from app.clock import FakeClock
from app.core.scope import Scope
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import results_for, suspended_run


async def test_tool_results_are_written_at_the_services_clock(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    view = await suspended_run(service)
    later = datetime.now(UTC) + timedelta(hours=1)
    service.clock = FakeClock(later)  # (as tests/limits/test_budgets.py does)
    out = await service.submit_tool_results(
        results_for(view), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.resumed
    assert out.record.updated_at == later  # fails: written at the real time
