"""Typed models, typed problems, pagination and usage, in-process (ASGITransport)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

from agentrun_client import (
    AgentrunError,
    AsyncClient,
    Conflict,
    InvalidInput,
    NotFound,
    RateLimited,
    RetryPolicy,
    Run,
    RunStatus,
    SubmitToolResults,
    ToolResult,
    Unauthorized,
    ValidationError,
)
from tests.client.conftest import scripted

ADD = {"name": "add", "parameters": {"type": "object"}}
MUL = {"name": "mul", "parameters": {"type": "object"}}


async def test_create_get_cancel_are_typed(asgi: AsyncClient) -> None:
    run = await asgi.runs.create(
        prompt="hi", model=scripted(), tools=[ADD], metadata={"k": "v"}, max_turns=2
    )
    assert isinstance(run, Run) and run.status == RunStatus.QUEUED
    assert run.metadata == {"k": "v"} and run.max_turns == 2 and run.created_at.tzinfo
    assert (await asgi.runs.get(run.id)).id == run.id
    cancelled = await asgi.runs.cancel(run.id)
    assert cancelled.status == RunStatus.CANCELLED and cancelled.is_terminal
    with pytest.raises(Conflict) as conflict:
        await asgi.runs.cancel(run.id)
    assert conflict.value.code == "run-state-conflict"
    assert conflict.value.current_status == RunStatus.CANCELLED


async def test_problems_become_typed_exceptions(asgi: AsyncClient) -> None:
    with pytest.raises(NotFound) as missing:
        await asgi.runs.get("run_doesnotexist")
    assert missing.value.code == "run-not-found" and missing.value.status == 404
    assert missing.value.instance == "/v1/runs/run_doesnotexist"
    with pytest.raises(ValidationError) as invalid:
        await asgi.runs.create(prompt="", model={"provider": "scripted"})
    assert invalid.value.code == "validation-error"
    assert {tuple(e.loc) for e in invalid.value.errors} >= {("body", "prompt")}
    with pytest.raises(ValidationError) as refused:
        await asgi.runs.create(
            prompt="x", model=scripted(), tools=[ADD], tool_choice={"name": "nope"}
        )
    assert refused.value.code == "invalid-request"


async def test_submit_and_its_refusals(asgi: AsyncClient) -> None:
    run = await asgi.runs.create(prompt="x", model=scripted(), tools=[ADD, MUL])
    suspended = await _until(asgi, run.id, RunStatus.REQUIRES_ACTION)
    assert isinstance(suspended.required_action, SubmitToolResults)
    first, second = suspended.pending_tool_calls
    assert (first.name, second.name) == ("add", "mul") and first.arguments == {}
    with pytest.raises(ValidationError) as not_pending:
        await asgi.runs.submit_tool_outputs(run.id, [{"tool_call_id": "nope", "output": 1}])
    assert not_pending.value.code == "tool-call-not-pending"
    answer = [{"tool_call_id": first.id, "output": "3"}]
    outcome = await asgi.runs.submit_tool_outputs(run.id, answer)
    assert outcome.accepted == [first.id] and not outcome.resumed
    assert [c.id for c in outcome.run.pending_tool_calls] == [second.id]
    again = await asgi.runs.submit_tool_outputs(run.id, answer)
    assert again.accepted == [] and not again.resumed  # re-sending is a no-op
    with pytest.raises(Conflict) as different:
        await asgi.runs.submit_tool_outputs(run.id, [{"tool_call_id": first.id, "output": "4"}])
    assert different.value.code == "tool-result-conflict"
    last = await asgi.runs.submit_tool_outputs(
        run.id, [ToolResult(tool_call_id=second.id, output={"x": 1}, is_error=True)]
    )
    assert last.resumed
    with pytest.raises(Conflict) as moved_on:
        await asgi.runs.submit_tool_outputs(run.id, answer)
    assert moved_on.value.current_status in (
        RunStatus.QUEUED,
        RunStatus.RUNNING,
        RunStatus.COMPLETED,
    )


async def _until(client: AsyncClient, run_id: str, status: RunStatus) -> Run:
    # ASGITransport buffers whole responses, so no live stream here: ask until it is so.
    import asyncio

    for _ in range(500):
        run = await client.runs.get(run_id)
        if run.status == status:
            return run
        await asyncio.sleep(0.01)
    raise AssertionError(f"run {run_id} never reached {status}")


async def test_list_follows_cursors(asgi: AsyncClient) -> None:
    ids = [
        (await asgi.runs.create(prompt=f"p{i}", model=scripted(), tools=[ADD])).id for i in range(5)
    ]
    page = await asgi.runs.list_page(limit=2)
    assert len(page.data) == 2 and page.next_cursor is not None
    seen = [r.id async for r in asgi.runs.list(page_size=2)]
    mine = [i for i in seen if i in ids]
    assert mine == ids[::-1], "every run once, newest first, across pages"
    queued = [r async for r in asgi.runs.list(status="queued", page_size=3)]
    assert all(r.status == RunStatus.QUEUED for r in queued)
    for run_id in ids:
        await asgi.runs.cancel(run_id)


async def test_idempotency_key_replays_the_same_run(asgi: AsyncClient) -> None:
    first = await asgi.runs.create(prompt="x", model=scripted(), idempotency_key="same-key")
    second = await asgi.runs.create(prompt="x", model=scripted(), idempotency_key="same-key")
    assert first.id == second.id
    with pytest.raises(ValidationError) as reused:
        await asgi.runs.create(prompt="other", model=scripted(), idempotency_key="same-key")
    assert reused.value.code == "idempotency-key-reused"


async def test_usage(asgi: AsyncClient) -> None:
    now = datetime.now(UTC)
    usage = await asgi.usage(from_=now - timedelta(hours=1), to=now + timedelta(minutes=1))
    assert usage.from_ < usage.to and usage.calls >= 0
    with pytest.raises(ValueError):
        await asgi.usage(from_=datetime(2026, 1, 1))  # naive: ambiguous


async def test_auth_problems(asgi_app: FastAPI) -> None:
    transport = httpx.ASGITransport(app=asgi_app)
    no_retry = RetryPolicy(max_retries=0)
    async with AsyncClient("http://test", "wrong", transport=transport, retry=no_retry) as bad:
        for _ in range(3):  # the app allows 3 failures per address (auth_failure_limit)
            with pytest.raises(Unauthorized):
                await bad.runs.get("run_x")
        with pytest.raises(RateLimited) as limited:
            await bad.runs.get("run_x")
    assert limited.value.retry_after is not None and limited.value.retry_after > 0


async def test_text_that_cannot_be_sent_is_refused_by_the_client(asgi: AsyncClient) -> None:
    """A lone surrogate is not Unicode, so JSON in UTF-8 cannot carry it: the client's own
    error, saying where it is, before anything is sent (a call that reached the server
    would have made a run, or met `NotFound` for `run_x`)."""
    before = [run.id async for run in asgi.runs.list()]
    with pytest.raises(InvalidInput) as prompt:
        await asgi.runs.create(prompt="ok \ud800", model=scripted(), tools=[ADD])
    assert isinstance(prompt.value, AgentrunError) and isinstance(prompt.value, ValueError)
    assert "body.prompt holds a lone surrogate '\\ud800' at index 3" in str(prompt.value)
    assert [run.id async for run in asgi.runs.list()] == before, "no run was made"
    with pytest.raises(InvalidInput, match=r"a key of body\.metadata holds a lone surrogate"):
        await asgi.runs.create(prompt="x", model=scripted(), metadata={"\udfff": 1})
    results = [ToolResult(tool_call_id="call_1", output={"text": ["fine", "\ud83d"]})]
    with pytest.raises(InvalidInput, match=r"body\.results\[0\]\.output\.text\[1\] holds"):
        await asgi.runs.submit_tool_outputs("run_x", results)
    with pytest.raises(InvalidInput, match="header Idempotency-Key is 'cl\u00e9': HTTP headers"):
        await asgi.runs.create(prompt="x", model=scripted(), idempotency_key="cl\u00e9")
    assert [run.id async for run in asgi.runs.list()] == before
