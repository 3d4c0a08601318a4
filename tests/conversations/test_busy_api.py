"""Busy conversations over HTTP, on SQLite and PostgreSQL, driven by the worker's driver:
`if_busy` `reject` (the default), `enqueue` and `interrupt` on a continuing create."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.conversations import busy
from app.core.scope import Scope
from app.service.errors import ConversationBusy
from app.service.operator_actions import retry_run
from app.service.runs import RunService
from app.store.runs import RunStore
from tests.api.test_runs_api import answers, assert_problem, suspend
from tests.conversations.test_api import all_messages, completed
from tests.helpers import drive_once


async def continuing(
    client: httpx.AsyncClient, previous: str, status: int = 201, **extra: Any
) -> dict[str, Any]:
    response = await client.post(
        "/v1/runs", json={"prompt": "and then?", "previous_run_id": previous, **extra}
    )
    assert response.status_code == status, response.text
    return response.json()  # type: ignore[no-any-return]


async def nothing_due(store: RunStore) -> bool:
    now = datetime.now(UTC)
    return await store.claim("probe", now, now + timedelta(seconds=30)) is None


async def texts(client: httpx.AsyncClient, run_id: str) -> list[Any]:
    return [m["message"] for m in await all_messages(client, run_id, 100)]


async def test_reject_is_the_default_and_names_the_active_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    response = await client.post(
        "/v1/runs", json={"prompt": "x", "previous_run_id": active["id"], "if_busy": "reject"}
    )
    doc = assert_problem(response, 409, "run-state-conflict")
    assert doc["active_run_id"] == active["id"] and doc["current_status"] == "requires_action"
    bad = await client.post(
        "/v1/runs", json={"prompt": "x", "previous_run_id": active["id"], "if_busy": "later"}
    )
    assert_problem(bad, 422, "validation-error")


async def test_enqueue_waits_and_starts_when_the_active_run_completes(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    waiting = await continuing(client, active["id"], if_busy="enqueue")
    assert waiting["status"] == "queued"
    assert waiting["waiting_reason"] == {"type": "conversation", "run_id": active["id"]}
    assert waiting["previous_run_id"] == active["id"]
    assert waiting["conversation_id"] == active["id"]
    # Usable at once: read, events; and not claimed while the conversation is busy.
    events = await client.get(f"/v1/runs/{waiting['id']}/events")
    assert events.status_code == 200, events.text
    assert await nothing_due(store)
    # A third run waits for the second, not the first (which is no longer the latest).
    late = await client.post("/v1/runs", json={"prompt": "x", "previous_run_id": active["id"]})
    assert assert_problem(late, 409, "run-state-conflict")["latest_run_id"] == waiting["id"]

    submitted = await client.post(f"/v1/runs/{active['id']}/tool-results", json=answers(active))
    assert submitted.status_code == 200, submitted.text
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    assert (await client.get(f"/v1/runs/{active['id']}")).json()["status"] == "completed"
    started = (await client.get(f"/v1/runs/{waiting['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}  # due now: the ending write woke it
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    done = (await client.get(f"/v1/runs/{waiting['id']}")).json()
    assert done["status"] in ("requires_action", "completed") and done["turn"] == 1, done
    before, after = await texts(client, active["id"]), await texts(client, waiting["id"])
    assert after[: len(before)] == before  # the active run's final conversation, whole
    assert after[len(before)]["content"] == [{"type": "text", "text": "and then?"}]


async def test_enqueue_after_a_cancel_continues_from_the_last_durable_point(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    waiting = await continuing(client, active["id"], if_busy="enqueue")
    cancelled = await client.post(f"/v1/runs/{active['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    done = (await client.get(f"/v1/runs/{waiting['id']}")).json()
    assert done["status"] in ("requires_action", "completed") and done["turn"] == 1, done
    before, after = await texts(client, active["id"]), await texts(client, waiting["id"])
    assert after[: len(before)] == before


async def test_a_waiting_run_cancelled_is_not_started(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    waiting = await continuing(client, active["id"], if_busy="enqueue")
    assert (await client.post(f"/v1/runs/{waiting['id']}/cancel")).status_code == 200
    # The active run is busy still: a new continuation of it waits again.
    again = await continuing(client, active["id"], if_busy="enqueue")
    assert again["waiting_reason"] == {"type": "conversation", "run_id": active["id"]}
    assert (await client.post(f"/v1/runs/{active['id']}/cancel")).status_code == 200
    assert (await client.get(f"/v1/runs/{waiting['id']}")).json()["status"] == "cancelled"
    started = (await client.get(f"/v1/runs/{again['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}


async def test_interrupt_cancels_the_active_run_and_continues_from_it(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    before = await texts(client, active["id"])
    run = await continuing(client, active["id"], if_busy="interrupt")
    assert run["status"] == "queued" and run["previous_run_id"] == active["id"]
    assert (await client.get(f"/v1/runs/{active['id']}")).json()["status"] == "cancelled"
    events = (await client.get(f"/v1/runs/{active['id']}/events")).json()["data"]
    assert any(e["type"] == "run.cancelled" and e["actor"] for e in events), events
    assert (await texts(client, run["id"]))[: len(before)] == before
    await drive_once(store, client.app.state.settings)  # type: ignore[attr-defined]
    assert (await client.get(f"/v1/runs/{run['id']}")).json()["turn"] == 1


async def test_an_idle_conversation_continues_as_before(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    first = await completed(client, store)
    run = await continuing(client, first["id"], if_busy="interrupt")
    assert run["status"] == "queued" and run["waiting_reason"] == {"type": "queued"}
    # The earlier run, while its successor is active: 409 naming the latest.
    again = await client.post("/v1/runs", json={"prompt": "x", "previous_run_id": first["id"]})
    doc = assert_problem(again, 409, "run-state-conflict")
    assert doc["latest_run_id"] == run["id"] == doc["active_run_id"]


async def test_an_enqueueing_create_replays_by_its_idempotency_key(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    doc = {"prompt": "and then?", "previous_run_id": active["id"], "if_busy": "enqueue"}
    headers = {"Idempotency-Key": "busy-1"}
    first = await client.post("/v1/runs", json=doc, headers=headers)
    replay = await client.post("/v1/runs", json=doc, headers=headers)
    assert first.status_code == 201 and replay.status_code == 200, replay.text
    assert replay.json()["id"] == first.json()["id"]
    events = (await client.get(f"/v1/runs/{active['id']}/events")).json()["data"]
    assert [e["data"]["run_id"] for e in events if e["type"] == "run.continued"] == [
        first.json()["id"]
    ]


async def test_an_interrupting_create_replays_by_its_idempotency_key(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    # The first request cancelled the active run: its replay answers with the run it made
    # (200), not a 409 for a cancelled run that "cannot be continued".
    active = await suspend(client, store)
    doc = {"prompt": "and then?", "previous_run_id": active["id"], "if_busy": "interrupt"}
    headers = {"Idempotency-Key": "busy-2"}
    first = await client.post("/v1/runs", json=doc, headers=headers)
    replay = await client.post("/v1/runs", json=doc, headers=headers)
    assert first.status_code == 201 and replay.status_code == 200, replay.text
    assert replay.json()["id"] == first.json()["id"]


async def test_an_enqueueing_create_replays_after_the_active_run_was_cancelled(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    doc = {"prompt": "and then?", "previous_run_id": active["id"], "if_busy": "enqueue"}
    headers = {"Idempotency-Key": "busy-3"}
    first = await client.post("/v1/runs", json=doc, headers=headers)
    assert (await client.post(f"/v1/runs/{active['id']}/cancel")).status_code == 200
    replay = await client.post("/v1/runs", json=doc, headers=headers)
    assert first.status_code == 201 and replay.status_code == 200, replay.text
    assert replay.json()["id"] == first.json()["id"]


async def test_two_enqueues_at_once_leave_no_run_waiting_forever(
    client: httpx.AsyncClient, store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The second create read the conversation before the first noted its run (as two
    # requests at once do): its note must not take the active run's only waiter slot
    # (awaited_by) from the first, whose run would then never start.
    active = await suspend(client, store)
    first = await continuing(client, active["id"], if_busy="enqueue")

    async def before_the_first_note(
        store: RunStore, record: Any, tenant: Any, key: Any = None
    ) -> tuple[Any, bool]:
        return record, False

    monkeypatch.setattr(busy, "latest", before_the_first_note)
    second = await client.post(
        "/v1/runs", json={"prompt": "x", "previous_run_id": active["id"], "if_busy": "enqueue"}
    )
    monkeypatch.undo()
    assert assert_problem(second, 409, "run-state-conflict")["latest_run_id"] == first["id"]
    assert (await client.post(f"/v1/runs/{active['id']}/cancel")).status_code == 200
    started = (await client.get(f"/v1/runs/{first['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}, started


async def test_two_enqueues_sent_together_make_one_waiting_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    active = await suspend(client, store)
    doc = {"prompt": "x", "previous_run_id": active["id"], "if_busy": "enqueue"}
    answers_ = await asyncio.gather(*(client.post("/v1/runs", json=doc) for _ in range(2)))
    assert sorted(r.status_code for r in answers_) == [201, 409], [r.text for r in answers_]
    (made,) = [r.json() for r in answers_ if r.status_code == 201]
    assert (await client.post(f"/v1/runs/{active['id']}/cancel")).status_code == 200
    started = (await client.get(f"/v1/runs/{made['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}, started


async def test_interrupting_a_waiting_run_keeps_the_conversation_and_one_active_run(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    # The latest run waits for the active one: interrupting it cancels it (it never
    # ran), and the new run takes its place behind the active run, not beside it with
    # only the waiting run's own messages.
    active = await suspend(client, store)
    before = await texts(client, active["id"])
    waiting = await continuing(client, active["id"], if_busy="enqueue")
    run = await continuing(client, waiting["id"], if_busy="interrupt")
    assert (await client.get(f"/v1/runs/{waiting['id']}")).json()["status"] == "cancelled"
    assert run["waiting_reason"] == {"type": "conversation", "run_id": active["id"]}, run
    assert (await client.post(f"/v1/runs/{active['id']}/cancel")).status_code == 200
    started = (await client.get(f"/v1/runs/{run['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}, started
    assert (await texts(client, run["id"]))[: len(before)] == before


async def test_an_ended_run_a_waiting_run_went_on_from_is_not_retried_beside_it(
    client: httpx.AsyncClient, store: RunStore
) -> None:
    # The active run expires, its waiting run starts from it; an operator's retry of the
    # expired run would make two active runs of one conversation: 409 naming the latest.
    active = await suspend(client, store, expires_in=60)
    waiting = await continuing(client, active["id"], if_busy="enqueue")
    later = datetime.now(UTC) + timedelta(minutes=5)
    # (the sweep's ending write starts the waiting run: the store's `run_ended` hook)
    assert await store.expire_suspended(later) == [active["id"]]
    started = (await client.get(f"/v1/runs/{waiting['id']}")).json()
    assert started["waiting_reason"] == {"type": "queued"}, started
    service = RunService(store, client.app.state.settings)  # type: ignore[attr-defined]
    with pytest.raises(ConversationBusy) as refused:
        await retry_run(service, active["id"], "operator", scope=Scope.ALL)
    assert refused.value.extra["latest_run_id"] == waiting["id"]
