"""Driving a run with compaction against the mock provider server: the OpenAI Chat wire
end to end, the run's tools answered by the test through the service."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from app.clock import SYSTEM_CLOCK, Clock
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.providers.base import Provider
from app.providers.registry import provider_from_settings
from app.service.runs import RunService
from app.service.schemas import RunCreate, ToolResultsIn
from app.service.tokens import new_key
from app.worker.driver import RunDriver
from tests.mocks.replies import MockToolCall, MockUsage, Reply
from tests.mocks.server import MockProviderServer

LOOK = {
    "name": "look",
    "description": "Look at the next page of the log",
    "parameters": {"type": "object", "properties": {"n": {"type": "integer"}}},
}
PREAMBLE = "You are a patient agent. PREAMBLE-MARK: never skip a page."
#: The messages the run is given, then its prompt: every system and user message here
#: must reach every later request as it is.
HISTORY = [
    {"role": "system", "content": "SYSTEM-RULES: report every page."},
    {"role": "user", "content": "USER-1: we will read a long log together."},
    {"role": "assistant", "content": "Understood, I will read it page by page."},
    {"role": "user", "content": "USER-2: keep a count of the errors you see."},
    {"role": "assistant", "content": "I will keep the count."},
]
PROMPT = "USER-PROMPT: read every page, then tell me the count."
PADDING = "page text " * 40


def wire_tokens(body: Mapping[str, Any]) -> int:
    """A request's tokens measured as the mock received it: the JSON text of its messages
    and tools, 4 characters a token."""
    text = json.dumps([body.get("messages"), body.get("tools")], separators=(",", ":"))
    return -(-len(text) // 4)


class Model:
    """The mock's responder: a tool call per turn until `turns`, then the answer; a
    summary for a request without tools. Its usage grows with the request it answers.
    Its calls' ids are `<prefix>_<n>` (a conversation's next run: another prefix)."""

    def __init__(self, turns: int, prefix: str = "call") -> None:
        self.turns = turns
        self.prefix = prefix
        self.calls = 0
        self.summaries = 0
        self.lock = threading.Lock()

    def __call__(self, body: Any) -> Reply:
        size = len(json.dumps(body))
        usage = MockUsage(input=size // 4, output=9)
        with self.lock:
            if "tools" not in body:
                self.summaries += 1
                text = f"SUMMARY-{self.summaries}: pages read so far, no errors seen."
                return Reply(text=text, usage=usage)
            self.calls += 1
            n = self.calls
        if n >= self.turns:
            return Reply(text="I read every page: 0 errors.", usage=usage)
        call = MockToolCall("look", json.dumps({"n": n}), id=f"{self.prefix}_{n}")
        return Reply(text=f"Reading page {n}.", tool_calls=[call], usage=usage)


def run_body(turns: int, threshold: int, **policy: Any) -> RunCreate:
    return RunCreate.model_validate(run_doc(turns, threshold, **policy))


def run_doc(turns: int, threshold: int, **policy: Any) -> dict[str, Any]:
    """A create's body (JSON): the run `run_body` makes."""
    return {
        "prompt": PROMPT,
        "preamble": PREAMBLE,
        "history": HISTORY,
        "model": {"provider": "openai", "name": "mock-model"},
        "tools": [LOOK],
        "max_turns": turns,
        "compaction": {"threshold_tokens": threshold, **policy},
    }


def summaries(mock: MockProviderServer) -> list[dict[str, Any]]:
    """The bodies of the summaries' requests the mock received (those without tools)."""
    return [r.body for r in mock.requests if "tools" not in r.body]


async def drive_to_end(service: RunService, run_driver: RunDriver, run_id: str) -> RunStatus:
    """Step the run until it completes or fails (its tool rounds answered)."""
    status = RunStatus.QUEUED
    for _ in range(400):
        status = await step(service, run_driver, run_id)
        if status in (RunStatus.COMPLETED, RunStatus.FAILED):
            return status
    raise AssertionError("the run did not end")


async def driver(
    service: RunService, mock: MockProviderServer, clock: Clock = SYSTEM_CLOCK
) -> RunDriver:
    def factory(spec: Mapping[str, Any]) -> Provider:
        return provider_from_settings(
            spec["provider"],
            openai_api_key="sk-test",
            openai_base_url=mock.openai_base_url,
            anthropic_api_key="sk-ant-test",
            anthropic_base_url=mock.anthropic_base_url,
            timeout=10,
        )

    key = await service.store.secret("callback_key", new_key)
    return RunDriver(service.store, service.settings, "test-worker", factory, key, clock=clock)


async def claim(
    service: RunService, worker: str = "test-worker", now: datetime | None = None
) -> Any:
    now = now or datetime.now(UTC)
    lease = timedelta(seconds=service.settings.lease_seconds)
    return await service.store.claim(worker, now, now + lease)


async def step(
    service: RunService, run_driver: RunDriver, run_id: str, now: datetime | None = None
) -> RunStatus:
    """Drive the run once (a claim at `now`), and answer its tool round if it asks for
    one."""
    record = await claim(service, now=now)
    assert record is not None and record.id == run_id, "the run is not due"
    status = await run_driver.drive(record)
    assert status is not None
    if status is RunStatus.REQUIRES_ACTION:
        view = await service.get_run(run_id, scope=Scope.ALL)
        results = [
            {"tool_call_id": c.call_id, "output": f"page {c.arguments.get('n')}: {PADDING}"}
            for c in view.pending
        ]
        if results:  # (a run waiting on its budget has none)
            body = ToolResultsIn.model_validate({"results": results})
            await service.submit_tool_results(body, run_id=run_id, scope=Scope.ALL)
    return status


async def compacted_run(
    service: RunService, mock: MockProviderServer, turns: int
) -> tuple[str, Model]:
    """A run of `turns` turns, compacted past 1000 tokens keeping one recent turn, driven
    to its end: its id, and the mock's model (its `summaries`)."""
    model = Model(turns=turns)
    mock.responder = model
    view, _ = await service.create_run(run_body(turns, 1000, keep_recent_turns=1))
    run_driver = await driver(service, mock)
    status = RunStatus.QUEUED
    while status is not RunStatus.COMPLETED:
        status = await step(service, run_driver, view.record.id)
    return view.record.id, model
