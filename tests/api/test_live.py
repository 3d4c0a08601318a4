"""A run's events as server-sent events: named by type, `id` the sequence number (what
Last-Event-ID resumes from), the event as JSON, and the stream ends with the run."""

from __future__ import annotations

import orjson

from app.api.live import server_sent_events
from app.clock import SYSTEM_CLOCK
from app.core.scope import Scope
from app.service.live import EventHub
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.helpers import run_body


async def test_events_become_server_sent_events_until_the_run_ends(
    store: RunStore, settings: Settings
) -> None:
    service = RunService(store, settings)
    hub = EventHub(store, settings.database_url, 0.05, clock=SYSTEM_CLOCK)
    view, _ = await service.create_run(run_body())
    await service.cancel(view.record.id, actor="someone", scope=Scope.ALL)
    try:
        sent = [e async for e in server_sent_events(hub, view.record.id, 0)]
        assert [(e.event, e.id) for e in sent] == [("run.created", "1"), ("run.cancelled", "2")]
        body = orjson.loads(str(sent[1].data))
        assert body["seq"] == 2 and body["type"] == "run.cancelled"
        assert body["actor"] == "someone" and body["created_at"].endswith("Z")
        resumed = [e async for e in server_sent_events(hub, view.record.id, 1)]
        assert [e.id for e in resumed] == ["2"]
    finally:
        await hub.close()
