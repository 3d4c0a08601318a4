"""Forks and replays through the client against the real server: a run's checkpoints as
typed models, a fork with a patched result and an appended message executed by the same
registry, replays that reproduce or diverge, a run's forks listed oldest first a page at a
time, refusals as the client's exceptions, and a fork retried after a lost response made
once."""

from __future__ import annotations

import time

import pytest
from fastapi import FastAPI

from agentrun_client import (
    Checkpoint,
    Conflict,
    EventType,
    InvalidInput,
    Message,
    NotFound,
    RunStatus,
    RunUsage,
    ToolRegistry,
    ToolResult,
    ValidationError,
)
from tests.client.conftest import Live, scripted
from tests.client.test_retries import ADD, Faulty, client_with

SCRIPT = (
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    {"tool_calls": [{"name": "add", "arguments": {"a": 3, "b": 4}}]},
    {"text": "the sums are 3 and 7"},
)
PROMPT = "add 1+2, then 3+4"


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return tools


def test_a_fork_with_a_patched_result_and_one_with_a_question(live: Live) -> None:
    tools = registry()
    with live.client() as client:
        run = client.run(PROMPT, tools=tools, model=scripted(*SCRIPT), timeout=30)
        assert run.status == RunStatus.COMPLETED and run.forked_from is None
        checkpoints = client.runs.checkpoints(run.id)
        assert all(isinstance(c, Checkpoint) for c in checkpoints)
        assert [(c.seq, c.kind, c.turn) for c in checkpoints] == [
            (1, "start", 0),
            (2, "tool_calls", 1),
            (3, "tool_results", 1),
            (4, "tool_calls", 2),
            (5, "tool_results", 2),
            (6, "answer", 3),
        ]
        assert isinstance(checkpoints[-1].usage, RunUsage)
        original = [m.message for m in client.runs.messages(run.id)]
        call_id = original[1].content[0]["id"]

        fork = client.runs.fork(
            run.id,
            at=3,
            tool_results=[ToolResult(tool_call_id=call_id, output=42)],
            overrides={"metadata": {"branch": "patched"}},
        )
        assert fork.forked_from is not None and not fork.forked_from.is_replay
        assert (fork.forked_from.run_id, fork.forked_from.checkpoint) == (run.id, 3)
        assert fork.metadata == {"branch": "patched"} and fork.id != run.id
        done = client.execute(fork.id, tools, deadline=time.monotonic() + 30)
        assert done.status == RunStatus.COMPLETED and done.output == "the sums are 3 and 7"
        forked = [m.message for m in client.runs.messages(fork.id)]
        assert forked[:2] == original[:2] and len(forked) == 6
        assert forked[2].content[0]["content"] == [{"type": "json", "value": 42}]
        assert [m.message for m in client.runs.messages(run.id)] == original  # unchanged

        question = client.runs.fork(
            run.id,
            at=6,
            append=["and 5+6?", Message(role="user", content="briefly")],
            overrides={"model": scripted({"text": "11"})},
        )
        answered = client.runs.wait(question.id, timeout=30)
        assert answered.status == RunStatus.COMPLETED and answered.output == "11"
        assert answered.turn == 4  # (its count goes on from the checkpoint's)
        asked = [m.message for m in client.runs.messages(question.id)]
        assert asked[:6] == original
        assert [m.role for m in asked[6:]] == ["user", "user", "assistant"]


async def test_replays_reproduce_or_diverge(live: Live) -> None:
    tools = registry()
    async with live.async_client() as client:
        run = await client.run(PROMPT, tools=tools, model=scripted(*SCRIPT), timeout=30)
        replay = await client.runs.fork(run.id, mode="replay")
        assert replay.forked_from is not None and replay.forked_from.is_replay
        done = await client.runs.wait(replay.id, timeout=30)  # (no executor: replayed)
        assert done.status == RunStatus.COMPLETED and done.output == run.output
        types = [e.type for e in await client.runs.list_events(replay.id)]
        assert types.count(EventType.MODEL_REPLAYED) == 3
        assert types.count(EventType.TOOLS_REPLAYED) == 2
        assert EventType.MODEL_CALLED not in types and EventType.REPLAY_DIVERGED not in types

        strict = await client.runs.fork(
            run.id, mode="replay", on_divergence="fail", overrides={"preamble": "Be terse."}
        )
        assert strict.forked_from is not None and strict.forked_from.on_divergence == "fail"
        failed = await client.runs.wait(strict.id, timeout=30)
        assert failed.status == RunStatus.FAILED and failed.error is not None
        assert failed.error["type"] == "replay_diverged"
        diverged = [e for e in await client.runs.list_events(strict.id)]
        assert any(e.type == EventType.REPLAY_DIVERGED for e in diverged)


def test_a_runs_forks_oldest_first_a_page_at_a_time(live: Live) -> None:
    with live.client() as client:
        run = client.run(PROMPT, tools=registry(), model=scripted(*SCRIPT), timeout=30)
        assert list(client.runs.forks(run.id)) == []
        made = [
            client.runs.fork(run.id, at=3),
            client.runs.fork(run.id, mode="replay", on_divergence="fail"),
            client.runs.fork(run.id, at=5),
        ]
        nested = client.runs.fork(made[0].id, at=1)
        listed = list(client.runs.forks(run.id, page_size=2))
        assert [r.id for r in listed] == [r.id for r in made]  # (not the fork's own fork)
        assert [
            (r.forked_from.checkpoint, r.forked_from.mode) for r in listed if r.forked_from
        ] == [
            (3, "fork"),
            (1, "replay"),
            (5, "fork"),
        ]
        first = client.runs.forks_page(run.id, limit=2)
        assert [r.id for r in first.data] == [r.id for r in made[:2]] and first.next_cursor
        rest = client.runs.forks_page(run.id, limit=2, cursor=first.next_cursor)
        assert [r.id for r in rest.data] == [made[2].id] and rest.next_cursor is None
        assert [r.id for r in client.runs.forks(made[0].id)] == [nested.id]
        assert [r.id for r in client.runs.forks(nested.id)] == []


async def test_refusals_are_typed_and_make_nothing(live: Live) -> None:
    tools = registry()
    async with live.async_client() as client:
        run = await client.run(PROMPT, tools=tools, model=scripted(*SCRIPT), timeout=30)
        call_id = (await client.runs.messages_page(run.id)).data[1].message.content[0]["id"]
        before = [r.id async for r in client.runs.list()]
        with pytest.raises(Conflict) as split:
            await client.runs.fork(run.id, at=2, append=["never mind"])
        assert split.value.code == "fork-split" and split.value.tool_call_id == call_id
        with pytest.raises(ValidationError) as past:
            await client.runs.fork(run.id, at=7)
        assert past.value.code == "invalid-request"
        with pytest.raises(ValidationError) as bad:
            await client.runs.fork(run.id, overrides={"max_turns": 0})
        assert "overrides" in bad.value.detail or bad.value.errors
        with pytest.raises(NotFound):
            await client.runs.fork("run_missing", at=1)
        with pytest.raises(NotFound):
            await client.runs.checkpoints("run_missing")
        with pytest.raises(NotFound) as no_run:
            await client.runs.forks_page("run_missing")
        assert no_run.value.code == "run-not-found"
        for page in ({"limit": 0}, {"limit": 101}, {"cursor": "not a cursor"}):
            with pytest.raises(ValidationError):
                await client.runs.forks_page(run.id, **page)  # type: ignore[arg-type]
        with pytest.raises(InvalidInput):
            [r async for r in client.runs.forks("not a run id")]
        for wrong in ({"at": 0}, {"at": True}, {"patch": {}, "append": ["x"]}):
            with pytest.raises(InvalidInput):  # (refused here: nothing sent)
                await client.runs.fork(run.id, **wrong)  # type: ignore[arg-type]
        assert [r.id async for r in client.runs.list()] == before  # nothing made


async def test_a_fork_is_idempotent_and_its_lost_response_is_replayed(
    asgi_app: FastAPI,
) -> None:
    transport = Faulty(asgi_app, ["pass", "drop", "drop"])  # (the create passes)
    async with client_with(transport) as client:
        run = await client.runs.create(prompt="once", model=scripted(), tools=[ADD])
        fork = await client.runs.fork(run.id)
        assert fork.forked_from is not None and fork.forked_from.checkpoint == 1
        again = await client.runs.fork(run.id, idempotency_key="fork-1")
        assert again.id != fork.id
        assert (await client.runs.fork(run.id, idempotency_key="fork-1")).id == again.id
        with pytest.raises(ValidationError) as reused:
            await client.runs.fork(run.id, at=1, mode="replay", idempotency_key="fork-1")
        assert reused.value.code == "idempotency-key-reused"
        for made in (run.id, fork.id, again.id):
            await client.runs.cancel(made)
    forks = [r for r in transport.requests if r.url.path.endswith("/fork")]
    assert len({r.headers["idempotency-key"] for r in forks[:3]}) == 1, "one key, 3 attempts"
    made = [r.json()["id"] for r in transport.dropped]
    assert made == [fork.id, fork.id], "the server made one fork; the retries replayed it"
