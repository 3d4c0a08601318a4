"""Compaction in a worker (`app.compaction.step`, the driver's turn boundary): a long run
stays under its threshold, keeps its preamble and every user message, pays for its
summaries, and a compaction is one durable step that a crash does not repeat. Kept
messages past the threshold do not make every turn pay for a summary; a summary written
by the run's own model takes none of the parameters that shape the run's answers; a
continued run's inherited history stays its history."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.compaction import log
from app.compaction.plan import SUMMARY_PREFIX
from app.core.events import EventType as E
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import RunCreate, RunLimits
from app.settings import Settings
from app.store.runs import RunStore
from tests.compaction.support import (
    HISTORY,
    PREAMBLE,
    PROMPT,
    Model,
    claim,
    drive_to_end,
    driver,
    run_body,
    run_doc,
    step,
    summaries,
    wire_tokens,
)
from tests.mocks.replies import Reply
from tests.mocks.server import MockProviderServer

THRESHOLD = 3000


def is_summary_shape(message: dict[str, Any]) -> bool:
    content = message["content"]
    return (
        message["role"] == "user"
        and isinstance(content, list)
        and content[0].get("text", "").startswith(SUMMARY_PREFIX)
    )


def plain_texts(body: Any) -> list[tuple[str, str]]:
    """The (role, text) of every system and user message of a Chat request that is text."""
    return [
        (m["role"], m["content"])
        for m in body["messages"]
        if m["role"] in ("system", "user") and isinstance(m["content"], str)
    ]


# (PostgreSQL, the production store: 15-20 s a back end; the reset batches' storage is
# tested on both by the shorter tests here and tests/core.)
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_a_200_turn_run_stays_under_its_threshold_and_keeps_every_user_message(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    service = RunService(store, settings)
    model = Model(turns=200)
    mock.responder = model
    view, _ = await service.create_run(run_body(200, THRESHOLD))
    run_id = view.record.id
    run_driver = await driver(service, mock)
    status = RunStatus.QUEUED
    claims = 0
    while status not in (RunStatus.COMPLETED, RunStatus.FAILED):
        status = await step(service, run_driver, run_id)
        claims += 1
        assert claims < 400
    done = await service.get_run(run_id, scope=Scope.ALL)
    assert status is RunStatus.COMPLETED, done.record.error
    assert done.record.output == "I read every page: 0 errors." and done.record.turn == 200

    turns = [r.body for r in mock.requests if "tools" in r.body]
    summaries = [r.body for r in mock.requests if "tools" not in r.body]
    assert len(turns) == 200 and model.summaries == len(summaries) >= 5
    given = [("system", PREAMBLE)] + [
        (m["role"], m["content"]) for m in HISTORY if m["role"] != "assistant"
    ]
    for body in turns:  # every request: under the threshold, with every user message
        assert wire_tokens(body) <= THRESHOLD
        assert plain_texts(body)[: len(given) + 1] == [*given, ("user", PROMPT)]
    assert max(wire_tokens(b) for b in turns) > THRESHOLD * 0.6  # (it did grow)

    events = await store.events(run_id, limit=100_000)
    compacted = [e for e in events if e.type == E.RUN_COMPACTED]
    called = [e for e in events if e.type == E.MODEL_CALLED]
    purposes = [e.data.get("purpose") for e in called]
    assert purposes.count("compaction") == len(compacted) == len(summaries)
    for event in compacted:
        data = event.data
        assert data["tokens_before"] > THRESHOLD >= data["tokens_after"]
        assert data["messages_after"] < data["messages_before"]
        assert data["summary_model"] == {"provider": "openai", "name": "mock-model"}
        assert data["usage"]["input_tokens"] > 0
    # The run's usage includes the summaries: the sum over every model call.
    usage = done.record.usage
    assert usage is not None
    assert usage["model_calls"] == len(called) == 200 + len(summaries)
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        assert usage[key] == sum(e.data["usage"][key] for e in called)
    summary_input = sum(e.data["usage"]["input_tokens"] for e in called if e.data.get("purpose"))
    assert summary_input > 0

    # The conversation is the compacted one; the log keeps every original message.
    page, _ = await service.messages(run_id, limit=1000, cursor=None, scope=Scope.ALL)
    assert sum(1 for e in page if is_summary_shape(e.message)) == 1
    assert len(page) < 40
    record = await store.get(run_id, with_log=True, scope=Scope.ALL)
    assert record is not None
    logged = log.entries(record.state, record.log)
    originals = {
        item["call"]
        for e in logged
        if not e.replaces and isinstance(e.message["content"], list)
        for item in e.message["content"]
        if item.get("type") == "toolresult"
    }
    assert originals == {f"call_{n}" for n in range(1, 200)}
    restated = [e for e in logged if e.replaces and is_summary_shape(e.message)]
    assert len(restated) == len(summaries)


async def test_a_compaction_is_written_once_and_a_crash_after_it_does_not_repeat_it(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    service = RunService(store, settings)
    model = Model(turns=8)
    mock.responder = model
    view, _ = await service.create_run(run_body(8, 1000, keep_recent_turns=1))
    run_id = view.record.id
    run_driver = await driver(service, mock)
    while model.summaries == 0:
        status = await step(service, run_driver, run_id)
        assert status is not RunStatus.COMPLETED
    # The compaction's own write: the run back in the queue, its summary paid for.
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.status is RunStatus.QUEUED
    events = await store.events(run_id, limit=100_000)
    assert events[-1].type == E.RUN_COMPACTED
    assert events[-2].type == E.MODEL_CALLED and events[-2].data["purpose"] == "compaction"
    assert after.record.usage is not None
    assert after.record.usage["model_calls"] == len([e for e in events if e.type == E.MODEL_CALLED])
    requests = len(mock.requests)

    # A worker claims it and dies before it calls the model: the reaper puts it back.
    dead = await claim(service, "dead-worker")
    assert dead is not None and dead.id == run_id
    later = dead.lease_expires_at + (dead.lease_expires_at - dead.updated_at)
    assert await store.reap_expired_leases(later) == [run_id]

    # The next claim calls the model with the compacted conversation: no summary again.
    await step(service, run_driver, run_id, now=later)
    assert len(mock.requests) == requests + 1
    body = mock.requests[-1].body
    assert "tools" in body
    assert any(
        m["role"] == "user" and str(m["content"]).startswith("Summary of the earlier")
        for m in body["messages"]
    )
    again = await store.events(run_id)
    assert sum(1 for e in again if e.type == E.RUN_COMPACTED) == 1


async def test_a_summary_is_asked_of_the_model_gates_like_any_call(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """A run whose budget is spent when it would compact: the summarising call is not
    made, and the run waits on its budget as it would before its turn's own call."""
    service = RunService(store, settings)
    mock.responder = Model(turns=8)
    free, _ = await service.create_run(run_body(8, 1000, keep_recent_turns=1))
    run_driver = await driver(service, mock)
    while not any(e.type == E.RUN_COMPACTED for e in await store.events(free.record.id)):
        await step(service, run_driver, free.record.id)
    calls = len([r for r in mock.requests if "tools" in r.body])
    await service.cancel(free.record.id, actor=None, scope=Scope.ALL)

    mock.reset()
    model = Model(turns=8)
    mock.responder = model
    body = run_body(8, 1000, keep_recent_turns=1)
    body.limits = RunLimits(max_model_calls=calls)
    capped, _ = await service.create_run(body)
    while model.calls < calls:
        await step(service, run_driver, capped.record.id)
    status = await step(service, run_driver, capped.record.id)
    view = await service.get_run(capped.record.id, scope=Scope.ALL)
    assert status is RunStatus.REQUIRES_ACTION
    assert view.record.waiting_reason is not None
    assert view.record.waiting_reason["type"] == "budget"
    assert model.summaries == 0 and len(mock.requests) == calls
    events = [e.type for e in await store.events(capped.record.id)]
    assert E.RUN_COMPACTED not in events and events[-1] == E.RUN_BUDGET_EXCEEDED


class NoSummaries(Model):
    """The model, but every summarising call fails (a 400 the provider does not retry)."""

    def __call__(self, body: Any) -> Reply:
        if "tools" not in body:
            with self.lock:
                self.summaries += 1
            return Reply.fault(400, "the summary request is refused")
        return super().__call__(body)


async def test_a_failed_summary_compacts_nothing_and_the_run_goes_on(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    service = RunService(store, settings)
    model = NoSummaries(turns=9)
    mock.responder = model
    view, _ = await service.create_run(run_body(9, 1000, keep_recent_turns=1))
    run_driver = await driver(service, mock)
    status = RunStatus.QUEUED
    while status is not RunStatus.COMPLETED:
        status = await step(service, run_driver, view.record.id)
        assert status is not RunStatus.FAILED
    events = await store.events(view.record.id)
    failed = [e for e in events if e.type == E.MODEL_FAILED]
    assert model.summaries >= 2 and len(failed) == model.summaries
    assert all(e.data["purpose"] == "compaction" and e.data["status"] == 400 for e in failed)
    assert E.RUN_COMPACTED not in [e.type for e in events]
    assert model.calls == 9


async def test_kept_messages_past_the_threshold_do_not_make_every_turn_pay_for_a_summary(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """A 6 KB prompt alone passes a 1000-token threshold: a compaction cannot bring the
    request under it, and one at every turn would save a turn's worth for a summary's
    call. A summary waits until a quarter of the threshold has gathered in older turns,
    and the summariser is not sent the kept messages again."""
    service = RunService(store, settings)
    model = Model(turns=12)
    mock.responder = model
    big = "BIG-PROMPT " + "the log to read, " * 350
    body = RunCreate.model_validate({**run_doc(12, 1000, keep_recent_turns=1), "prompt": big})
    view, _ = await service.create_run(body)
    status = await drive_to_end(service, await driver(service, mock), view.record.id)
    assert status is RunStatus.COMPLETED
    assert model.calls == 12
    assert 1 <= model.summaries <= 6  # (not one a turn)
    asked = summaries(mock)
    assert not any("BIG-PROMPT" in str(b) or "USER-1" in str(b) for b in asked)
    events = await store.events(view.record.id, limit=100_000)
    called = [e.data for e in events if e.type == E.MODEL_CALLED]
    spent = sum(d["usage"]["input_tokens"] for d in called if d.get("purpose"))
    turns = sum(d["usage"]["input_tokens"] for d in called if not d.get("purpose"))
    assert spent * 10 < turns
    for event in (e for e in events if e.type == E.RUN_COMPACTED):
        assert event.data["tokens_before"] - event.data["tokens_after"] >= 100


async def test_a_summary_by_the_run_s_model_takes_only_who_and_where_from_its_params(
    store: RunStore, settings: Settings, mock: MockProviderServer
) -> None:
    """The run's model writes the summary (no `compaction.model`): its request is a
    plain text completion that keeps the run's identifiers and service tier, not its
    output cap, format, tool options, sampling or `extra_body`."""
    service = RunService(store, settings)
    model = Model(turns=8)
    mock.responder = model
    spec = {
        "provider": "openai",
        "name": "mock-model",
        "max_completion_tokens": 64,
        "parallel_tool_calls": False,
        "response_format": {"type": "json_object"},
        "temperature": 1.7,
        "stop": ["\n\n"],
        "user": "end-user-7",
        "service_tier": "flex",
        "metadata": {"team": "logs"},
        "extra_body": {"custom_flag": True},
    }
    body = RunCreate.model_validate({**run_doc(8, 1000, keep_recent_turns=1), "model": spec})
    view, _ = await service.create_run(body)
    assert await drive_to_end(service, await driver(service, mock), view.record.id) in (
        RunStatus.COMPLETED,
    )
    asked = summaries(mock)
    assert asked and model.summaries == len(asked)
    for sent in asked:
        assert sent["user"] == "end-user-7" and sent["service_tier"] == "flex"
        assert sent["metadata"] == {"team": "logs"}
        for key in (
            "max_completion_tokens",
            "parallel_tool_calls",
            "response_format",
            "temperature",
            "stop",
            "custom_flag",
        ):
            assert key not in sent, key
    turn = next(r.body for r in mock.requests if "tools" in r.body)
    assert turn["max_completion_tokens"] == 64 and turn["custom_flag"] is True  # (unchanged)

    # A policy's own model sends its own parameters, as given.
    mock.reset()
    mock.responder = Model(turns=8)
    own = {"provider": "openai", "name": "summariser", "temperature": 0.1, "user": "s"}
    body = RunCreate.model_validate(run_doc(8, 1000, keep_recent_turns=1, model=own))
    view, _ = await service.create_run(body)
    await drive_to_end(service, await driver(service, mock), view.record.id)
    asked = summaries(mock)
    assert asked and all(b["temperature"] == 0.1 and b["model"] == "summariser" for b in asked)


async def page_of(client: httpx.AsyncClient, path: str) -> list[dict[str, Any]]:
    response = await client.get(path, params={"limit": 100})
    assert response.status_code == 200, response.text
    data: list[dict[str, Any]] = response.json()["data"]
    return data


async def check_apart(client: httpx.AsyncClient, run_id: str, prompt: str) -> list[Any]:
    """The run's conversation: its inherited messages first (`from_history`), then its
    own, which start with its prompt, where its `start` checkpoint is."""
    conversation = await page_of(client, f"/v1/runs/{run_id}/messages")
    at = next(
        e["index"]
        for e in conversation
        if e["message"]["content"] == [{"type": "text", "text": prompt}]
    )
    assert [e["from_history"] for e in conversation] == [e["index"] < at for e in conversation]
    checkpoints = await page_of(client, f"/v1/runs/{run_id}/checkpoints")
    assert checkpoints[0]["kind"] == "start" and checkpoints[0]["seq"] == at + 1
    return conversation


async def test_a_continued_run_s_inherited_history_stays_its_history(
    client: httpx.AsyncClient,
    store: RunStore,
    api_settings: Settings,
    mock: MockProviderServer,
) -> None:
    """A run that continues another compacts into the conversation it inherited (its
    recent turns are the earlier run's): the inherited messages it keeps, and the summary
    of inherited turns, stay its history; its own messages still start with its prompt,
    and so does its `start` checkpoint. A later compaction that summarises its own turns
    too puts the summary among its own messages, after its prompt."""
    service = RunService(store, api_settings)
    mock.responder = Model(turns=6)
    first, _ = await service.create_run(run_body(6, 10**6))
    run_driver = await driver(service, mock)
    assert await drive_to_end(service, run_driver, first.record.id) is RunStatus.COMPLETED

    model = Model(turns=9, prefix="more")
    mock.responder = model
    prompt = "CONTINUE: now count the warnings too."
    policy = {"threshold_tokens": 1000, "keep_recent_turns": 2}
    made = await client.post(
        "/v1/runs",
        json={
            "prompt": prompt,
            "previous_run_id": first.record.id,
            "compaction": policy,
            "max_turns": 20,
        },
    )
    assert made.status_code == 201, made.text
    run_id = made.json()["id"]
    assert await step(service, run_driver, run_id) is RunStatus.QUEUED  # (compacted)
    assert model.summaries == 1 and model.calls == 0
    conversation = await check_apart(client, run_id, prompt)
    assert conversation[-1]["from_history"] is False  # (its prompt only)
    summary_at = [e["index"] for e in conversation if is_summary_shape(e["message"])]
    assert len(summary_at) == 1 and conversation[summary_at[0]]["from_history"]

    status = await drive_to_end(service, run_driver, run_id)
    done = await service.get_run(run_id, scope=Scope.ALL)
    assert status is RunStatus.COMPLETED, done.record.error
    assert model.summaries >= 2
    conversation = await check_apart(client, run_id, prompt)
    own = [e for e in conversation if not e["from_history"]]
    assert sum(is_summary_shape(e["message"]) for e in conversation) == 1
    assert is_summary_shape(own[1]["message"])  # (the latest summary: after its prompt)
