"""A gated call never reaches a webhook executor before its approval (checked on the
receiving side: a real worker, a real receiver), and the approval hands it out with the
round's callback URL, through which the executor answers; a timed-out approval is
decided by the worker's own sweep."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from app.approvals.service import ApprovalService
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.service.schemas import DecisionsIn, RunCreate, ToolResultsIn
from app.settings import Settings
from app.store.runs import RunStore
from tests.conftest import make_settings
from tests.helpers import running_worker, wait_for, wait_status
from tests.mocks.receiver import SECRET, Receiver, webhook_receiver

TOOLS = [
    {"name": "wire", "parameters": {"type": "object"}, "approval": "always"},
    {"name": "lookup", "parameters": {"type": "object"}},
]


def gated_run(url: str, **overrides: Any) -> RunCreate:
    script = [
        {
            "tool_calls": [
                {"name": "wire", "arguments": {"amount": 900}},
                {"name": "lookup", "arguments": {"q": "rates"}},
            ]
        },
        {"text": "done"},
    ]
    return RunCreate.model_validate(
        {
            "prompt": "pay",
            "model": {"provider": "scripted", "name": "demo", "script": script},
            "tools": TOOLS,
            "webhook": {"url": url},
            **overrides,
        }
    )


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with webhook_receiver() as r:
        yield r


@pytest.fixture
def hook_settings(database_url: str) -> Settings:
    return make_settings(
        database_url, webhook_secret=SECRET, webhook_allow_private=True, reap_interval=0.05
    )


def call_ids(receiver: Receiver) -> list[str]:
    """Every call id handed to the receiver by `run.requires_action`, in arrival order."""
    return [
        c["id"]
        for r in receiver.of_type("run.requires_action")
        for c in r.payload["data"]["tool_calls"]
    ]


async def answer(service: RunService, callback_url: str, call_id: str, output: str) -> None:
    """What the executor's POST to the callback URL does (no API in this test)."""
    token = callback_url.split("/v1/callbacks/")[1].split("/")[0]
    body = ToolResultsIn.model_validate({"results": [{"tool_call_id": call_id, "output": output}]})
    outcome = await service.submit_tool_results(
        body, token=token, actor="callback", scope=Scope.ALL
    )
    assert outcome.accepted == [call_id]


async def test_a_webhook_executor_gets_a_gated_call_only_once_approved(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    approvals = ApprovalService(service)
    view, _ = await service.create_run(gated_run(receiver.url))
    async with running_worker(store, hook_settings):
        await wait_for(lambda: asyncio.sleep(0, receiver.of_type("run.approval_required")), bool)
        await wait_for(lambda: asyncio.sleep(0, call_ids(receiver)), bool)
        (required,) = receiver.of_type("run.approval_required")
        (gated,) = required.payload["data"]["approvals"]
        assert gated["name"] == "wire" and "callback_url" not in required.payload["data"]
        assert call_ids(receiver) == ["call_1_1"]  # the ungated call, at once
        assert gated["id"] == "call_1_0"
        first = receiver.of_type("run.requires_action")[0].payload["data"]
        url = first["callback_url"]
        # The executor answers the call it was given: the run still waits.
        await answer(service, url, "call_1_1", "1.1")
        assert gated["id"] not in call_ids(receiver)
        body = DecisionsIn.model_validate(
            {
                "decisions": [
                    {
                        "tool_call_id": gated["id"],
                        "arguments_hash": gated["arguments_hash"],
                        "action": "approve",
                    }
                ]
            }
        )
        decided = await approvals.decide(view.record.id, body, actor="key:abc", scope=Scope.ALL)
        assert decided.record.status is RunStatus.REQUIRES_ACTION
        await wait_for(lambda: asyncio.sleep(0, call_ids(receiver)), lambda ids: len(ids) == 2)
        released = receiver.of_type("run.requires_action")[-1].payload["data"]
        assert [c["id"] for c in released["tool_calls"]] == [gated["id"]]
        assert released["callback_url"] == url  # the round's, as before
        await answer(service, url, gated["id"], "sent")
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    assert done.record.output == "done"


async def test_the_worker_sweep_rejects_an_approval_past_its_timeout(
    store: RunStore, hook_settings: Settings, receiver: Receiver
) -> None:
    service = RunService(store, hook_settings)
    view, _ = await service.create_run(gated_run(receiver.url, approval_timeout=0.2))
    async with running_worker(store, hook_settings):
        await wait_for(lambda: asyncio.sleep(0, call_ids(receiver)), bool)
        url = receiver.of_type("run.requires_action")[0].payload["data"]["callback_url"]
        await answer(service, url, "call_1_1", "1.1")
        done = await wait_status(service, view.record.id, RunStatus.COMPLETED)
    events = await store.events(view.record.id)
    (rejected,) = [e for e in events if e.type == "tool_call.rejected"]
    assert rejected.actor == "system:approval-timeout"
    assert done.record.output == "done"
    assert "call_1_0" not in call_ids(receiver)
