"""Conversations through the client against the real server (both databases): a run
continuing another with `previous_run_id`, its conversation page by page, and a page
sent back as `history`."""

from __future__ import annotations

import pytest

from agentrun_client import (
    Conflict,
    ConversationMessage,
    EventType,
    NotFound,
    RunStatus,
    ToolRegistry,
    ValidationError,
)
from tests.client.conftest import Live, scripted
from tests.mocks.gate import Gate

ECHO = {"provider": "scripted", "name": "echo"}


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def add(a: float = 1, b: float = 1) -> float:
        """Add two numbers."""
        return a + b

    return tools


def test_a_run_continues_another_and_reads_its_conversation(live: Live) -> None:
    tools = registry()
    with live.client() as client:
        first = client.run("one", tools=tools, model=scripted(), preamble="Be brief.", timeout=30)
        assert first.status == RunStatus.COMPLETED and first.output == "Tool results: add: 2"
        assert first.conversation_id == first.id and first.previous_run_id is None
        # No model, no tools: both inherited; the scripted model (no script) calls `add`.
        second = client.run("two", tools=tools, previous_run_id=first.id, timeout=30)
        assert second.status == RunStatus.COMPLETED and second.model == first.model
        assert second.previous_run_id == first.id and second.conversation_id == first.id
        earlier = list(client.runs.messages(first.id))
        entries = list(client.runs.messages(second.id, page_size=2))
        assert all(isinstance(e, ConversationMessage) for e in entries)
        assert [e.index for e in entries] == list(range(len(entries)))
        assert [e.message for e in entries[: len(earlier)]] == [e.message for e in earlier]
        assert [e.from_history for e in entries] == [True] * len(earlier) + [False] * 4
        assert entries[len(earlier)].message.content == [{"type": "text", "text": "two"}]
        noted = client.runs.list_events(first.id)[-1]
        assert noted.type == EventType.RUN_CONTINUED and noted.data["run_id"] == second.id

        copy = client.runs.create(
            prompt="three", model=ECHO, history=[e.message.as_history() for e in entries]
        )
        done = client.runs.wait(copy.id, timeout=30)
        assert done.output == "You said: three"
        copied = [e.message for e in client.runs.messages(copy.id)]
        assert copied[: len(entries)] == [e.message for e in entries]


async def test_refusals_are_typed(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    Gate().patch(monkeypatch)  # (its model call never answers: the run stays active)
    async with live.async_client() as client:
        queued = await client.runs.create(prompt="x", model=scripted())
        with pytest.raises(Conflict) as conflict:
            await client.runs.create(prompt="y", previous_run_id=queued.id)
        assert conflict.value.current_status in (RunStatus.QUEUED, RunStatus.RUNNING)
        with pytest.raises(NotFound):
            await client.runs.create(prompt="y", previous_run_id="run_missing")
        with pytest.raises(ValidationError) as invalid:
            await client.runs.create(prompt="y")
        assert invalid.value.code == "invalid-request"
        page = await client.runs.messages_page(queued.id)
        assert [m.message.role for m in page.data] == ["user"] and page.next_cursor is None
        assert [m.index async for m in client.runs.messages(queued.id)] == [0]
        await client.runs.cancel(queued.id)
