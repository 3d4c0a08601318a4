"""A round's answers as input, on both back ends: recorded in their rows where they
arrive (the run's state is not read), applied by the worker that claims the run, and
shown applied wherever the conversation is read before that."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from app.clock import SYSTEM_CLOCK
from app.core import AgentRun, ToolResult, UserMessage, stored
from app.core.jsonvalue import compact_json, thaw
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import convert, recorded
from app.service.runs import RunService
from app.service.schemas import RunCreate, ToolResultsIn
from app.service.tokens import new_key
from app.settings import Settings
from app.store import changes
from app.store.changes import Answer
from app.store.runs import RunStore
from app.store.schema import runs, tool_calls
from app.worker.driver import RunDriver
from app.worker.providers import make_provider
from tests.helpers import drive_once, results_for, run_body, suspended_run


@pytest.fixture
def service(store: RunStore, settings: Settings) -> RunService:
    return RunService(store, settings.model_copy(update={"webhook_allow_private": True}))


def result_messages(history: tuple[object, ...]) -> list[list[tuple[str, str]]]:
    """Each tool-results message of `history`: its (call id, text) pairs, in order."""
    out = []
    for m in history:
        if isinstance(m, UserMessage) and all(isinstance(c, ToolResult) for c in m.content):
            out.append([(c.call_id, c.content[0].text) for c in m.content])  # type: ignore[union-attr]
    return out


async def test_a_resuming_submission_does_not_read_the_state(service: RunService) -> None:
    view = await suspended_run(service)
    async with service.store.engine.begin() as conn:  # a state no version could decode
        await conn.execute(sa.update(runs).where(runs.c.id == view.record.id).values(state="{"))
    out = await service.submit_tool_results(
        results_for(view), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.resumed and out.record.status == RunStatus.QUEUED
    assert out.accepted == [c.call_id for c in view.pending]
    stored_now = await service.store.get(view.record.id, scope=Scope.ALL)
    assert stored_now is not None and stored_now.state == "{"


async def test_the_worker_applies_the_recorded_answers(service: RunService) -> None:
    view = await suspended_run(service)
    first, second = view.pending
    before = await service.store.get(view.record.id, with_log=True, scope=Scope.ALL)
    assert before is not None
    out = await service.submit_tool_results(
        results_for(view), run_id=view.record.id, scope=Scope.ALL
    )
    assert out.resumed
    queued = await service.store.get(view.record.id, with_log=True, scope=Scope.ALL)
    assert queued is not None
    assert (queued.state, queued.log) == (before.state, before.log)  # written once: the rows
    # Read before a worker claims it, the conversation already holds the answers.
    run = await service.load_run(view.record.id, scope=Scope.ALL)
    assert not run.pending_tool_calls()
    expected = [[(first.call_id, "3"), (second.call_id, "7")]]
    assert result_messages(run.full_history()) == expected
    entries, _ = await service.messages(view.record.id, limit=50, cursor=None, scope=Scope.ALL)
    assert entries[-1].message["role"] == "user"
    assert [c["type"] for c in entries[-1].message["content"]] == ["toolresult"] * 2
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    done = await service.load_run(view.record.id, scope=Scope.ALL)
    assert result_messages(done.full_history()) == expected  # fed once, in the run's order
    assert done.response() is not None


async def test_recorded_answers_of_an_open_round_are_not_applied(service: RunService) -> None:
    view = await suspended_run(service)
    first, _ = view.pending
    body = results_for(view)
    partial = body.model_copy(update={"results": body.results[:1]})
    out = await service.submit_tool_results(partial, run_id=view.record.id, scope=Scope.ALL)
    assert out.accepted == [first.call_id] and not out.resumed
    record = await service.store.get(view.record.id, with_log=True, scope=Scope.ALL)
    assert record is not None
    run = stored.load(record.state, record.log).run
    calls = await service.store.tool_calls(view.record.id, run.turn())
    assert calls[0].result_hash is not None and calls[1].result_hash is None
    assert not recorded.apply(run, calls)
    assert len(run.pending_tool_calls()) == 2  # (untouched: it still waits for the round)
    with pytest.raises(recorded.RoundMismatch):  # (rows of another order are not its round)
        recorded.apply(run, calls[::-1])
    assert not recorded.apply(run, [])  # (no rows: a round not handed out yet)
    assert len((await service.load_run(view.record.id, scope=Scope.ALL)).pending_tool_calls()) == 2


async def test_a_run_resumed_by_an_earlier_version_completes(service: RunService) -> None:
    """An API process of the version before this one fed the answers to the state itself;
    a worker of this version takes such a run as it is (a rolling upgrade)."""
    view = await suspended_run(service)
    store = service.store
    pending = await store.pending(run_id=view.record.id, scope=Scope.ALL)
    round = pending.record.waiting_round
    assert round is not None
    outputs = {
        c.call_id: {"output": str(sum(c.arguments.values())), "is_error": False}
        for c in pending.calls
    }
    answered = [
        dataclasses.replace(
            c, result=outputs[c.call_id], result_hash=convert.canonical_hash(outputs[c.call_id])
        )
        for c in pending.calls
    ]
    loaded = stored.load(pending.record.state, control_only=True)
    assert recorded.apply(loaded.run, answered)
    now = datetime.now(UTC)
    answers = [Answer(round, c.position, c.result, c.result_hash) for c in answered]  # type: ignore[arg-type]
    change = changes.resume(
        pending.record.version,
        now,
        [],
        answers,
        round=round,
        snapshot=stored.snapshot(loaded),
        turn=loaded.run.turn(),
    )
    updated, _ = await store.apply(
        view.record.id, change, now, known=pending.record, scope=Scope.ALL
    )
    assert updated is not None and updated.status == RunStatus.QUEUED
    assert await drive_once(store, service.settings) == RunStatus.COMPLETED
    done = await service.load_run(view.record.id, scope=Scope.ALL)
    assert len(result_messages(done.full_history())) == 1


async def test_a_run_interrupted_after_its_answers_is_continued_with_them(
    service: RunService,
) -> None:
    view = await suspended_run(service)
    await service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
    body = RunCreate(prompt="and now?", previous_run_id=view.record.id, if_busy="interrupt")
    nxt, _ = await service.create_run(body)
    ended = await service.get_run(view.record.id, scope=Scope.ALL)
    assert ended.record.status == RunStatus.CANCELLED
    first, second = view.pending
    history = (await service.load_run(nxt.record.id, scope=Scope.ALL)).full_history()
    assert result_messages(history) == [[(first.call_id, "3"), (second.call_id, "7")]]


async def test_the_claim_reads_the_round_with_the_run(service: RunService) -> None:
    """The worker needs no read of its own: the claim returns the answered round."""
    store = service.store
    view, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    first = await store.claim("w", now, now + timedelta(seconds=30))
    assert first is not None and first.round_calls == ()  # (never suspended: no round)
    key = await store.secret("callback_key", new_key)
    provider = lambda s: make_provider(s, service.settings, clock=SYSTEM_CLOCK)  # noqa: E731
    await RunDriver(store, service.settings, "w", provider, key, clock=SYSTEM_CLOCK).drive(first)
    suspended = await service.get_run(view.record.id, scope=Scope.ALL)
    await service.submit_tool_results(
        results_for(suspended), run_id=view.record.id, scope=Scope.ALL
    )
    now = datetime.now(UTC)
    again = await store.claim("w", now, now + timedelta(seconds=30))
    assert again is not None and again.round_calls is not None
    assert [c.call_id for c in again.round_calls] == [c.call_id for c in suspended.pending]
    assert [c.result["output"] for c in again.round_calls] == ["3", "7"]


async def test_answers_that_cannot_be_fed_fail_the_run(service: RunService) -> None:
    """Rows changed behind the service's back fail the run, its state as it was (an
    operator can mend and retry it), instead of failing every claim of it."""
    view = await suspended_run(service)
    await service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
    before = await service.store.get(view.record.id, scope=Scope.ALL)
    assert before is not None
    async with service.store.engine.begin() as conn:
        await conn.execute(
            sa.update(tool_calls).where(tool_calls.c.run_id == view.record.id).values(result=[1])
        )
    assert await drive_once(service.store, service.settings) == RunStatus.FAILED
    failed = await service.store.get(view.record.id, scope=Scope.ALL)
    assert failed is not None and failed.error is not None
    assert "cannot be fed to the run" in failed.error["message"]
    assert failed.state == before.state
    # Its conversation is shown as stored (not a 500 on every read).
    assert len((await service.load_run(view.record.id, scope=Scope.ALL)).pending_tool_calls()) == 2
    entries, _ = await service.messages(view.record.id, limit=50, cursor=None, scope=Scope.ALL)
    assert entries[-1].message["role"] == "assistant"


async def test_rows_of_other_calls_fail_the_run_and_keep_their_answers(
    service: RunService,
) -> None:
    """A round whose rows name other calls than the state waits on is not suspended
    again (which would reset the answers given): the run fails, naming both."""
    view = await suspended_run(service)
    await service.submit_tool_results(results_for(view), run_id=view.record.id, scope=Scope.ALL)
    first = view.pending[0]
    async with service.store.engine.begin() as conn:
        await conn.execute(
            sa.update(tool_calls)
            .where(tool_calls.c.run_id == view.record.id, tool_calls.c.call_id == first.call_id)
            .values(call_id="call_elsewhere")
        )
    assert await drive_once(service.store, service.settings) == RunStatus.FAILED
    failed = await service.store.get(view.record.id, scope=Scope.ALL)
    assert failed is not None and failed.error is not None
    assert failed.error["type"] == "RoundMismatch" and "call_elsewhere" in failed.error["message"]
    rows = await service.store.tool_calls(view.record.id)
    assert all(r.result_hash is not None for r in rows)  # (the answers are still there)


async def test_a_claim_chained_to_a_final_write_reads_the_round(service: RunService) -> None:
    """The worker's usual path: the write that suspends one run claims the next, a run
    resumed by its answers, which it is handed with its round's rows."""
    store = service.store
    resumed = await suspended_run(service)
    other, _ = await service.create_run(run_body())
    now = datetime.now(UTC)
    claimed = await store.claim("w", now, now + timedelta(seconds=30))
    assert claimed is not None and claimed.id == other.record.id
    await service.submit_tool_results(
        results_for(resumed), run_id=resumed.record.id, scope=Scope.ALL
    )
    key = await store.secret("callback_key", new_key)
    provider = lambda s: make_provider(s, service.settings, clock=SYSTEM_CLOCK)  # noqa: E731
    driver = RunDriver(store, service.settings, "w", provider, key, clock=SYSTEM_CLOCK)
    nxt, looked = await driver.drive_and_claim(claimed, lambda: True)
    assert looked and nxt is not None and nxt.id == resumed.record.id
    assert nxt.round_calls is not None
    assert [c.result["output"] for c in nxt.round_calls] == ["3", "7"]
    assert await driver.drive(nxt) == RunStatus.COMPLETED


async def test_a_json_output_reaches_the_model_in_the_order_given(service: RunService) -> None:
    """Fed from its row, an object output keeps its keys' order (PostgreSQL's `jsonb`
    would put the shorter first) whichever way the worker reads the round."""
    view = await suspended_run(service)
    first, second = view.pending
    given = {"temperature": 20, "city": "Paris", "zone": {"zz": 1, "a": [2, {"yy": 3, "b": 4}]}}
    body = ToolResultsIn.model_validate(
        {
            "results": [
                {"tool_call_id": first.call_id, "output": given},
                {"tool_call_id": second.call_id, "output": {"b": 1, "a": 2}},
            ]
        }
    )
    await service.submit_tool_results(body, run_id=view.record.id, scope=Scope.ALL)

    def outputs(run: AgentRun) -> list[str]:
        (message,) = [
            m
            for m in run.full_history()
            if isinstance(m, UserMessage) and isinstance(m.content[0], ToolResult)
        ]
        return [compact_json(thaw(c.content[0].value)) for c in message.content]  # type: ignore[union-attr]

    expected = [compact_json(given), '{"b":1,"a":2}']
    assert (
        outputs(await service.load_run(view.record.id, scope=Scope.ALL)) == expected
    )  # (applied on read)
    assert await drive_once(service.store, service.settings) == RunStatus.COMPLETED
    assert (
        outputs(await service.load_run(view.record.id, scope=Scope.ALL)) == expected
    )  # (fed by the claim)
