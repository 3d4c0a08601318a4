"""The client's approvals without a server: what `approvals.approve|reject|decide` send,
and how the inline executor (`execute`, `run`) treats an `approve_tool_calls` suspension
(the ungated calls run at once; a gated one only once approved; `on_approval` asked once
per call; undecided calls are left to a person). A fake API over `httpx.MockTransport`
holds one run; tests/client/test_approvals.py runs the same against the real service."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from agentrun_client import (
    Approval,
    ApprovalCall,
    Approve,
    ApproveToolCalls,
    AsyncClient,
    Client,
    InvalidInput,
    Reject,
    RunStatus,
    ToolRegistry,
)

RUN = "run_offline1"
NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC).isoformat()


class FakeRun:
    """One suspended run: gated `pay` (hash `h-pay`), ungated `look`."""

    def __init__(self) -> None:
        self.gated: dict[str, dict[str, Any]] = {
            "tc_pay": {
                "id": "tc_pay",
                "name": "pay",
                "arguments": {"amount": 500},
                "arguments_hash": "h-pay",
            },
        }
        self.open: dict[str, dict[str, Any]] = {
            "tc_look": {"id": "tc_look", "name": "look", "arguments": {"q": "x"}},
        }
        self.answered: dict[str, Any] = {}
        self.decisions: list[dict[str, Any]] = []
        self.submissions: list[dict[str, Any]] = []

    def body(self) -> dict[str, Any]:
        calls = [{**c, "answered": c["id"] in self.answered} for c in self.open.values()]
        done = not self.gated and all(c["answered"] for c in calls)
        action: dict[str, Any] | None
        if done:
            action = None
        elif self.gated:
            action = {
                "type": "approve_tool_calls",
                "approvals": list(self.gated.values()),
                "tool_calls": calls,
                "callback_url": None,
            }
        else:
            action = {"type": "submit_tool_results", "tool_calls": calls}
        return {
            "id": RUN,
            "turn": 1,
            "max_turns": 5,
            "created_at": NOW,
            "updated_at": NOW,
            "status": "completed" if done else "requires_action",
            "required_action": action,
            "output": json.dumps(self.answered, sort_keys=True) if done else None,
        }

    def handle(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET" and path in (f"/v1/runs/{RUN}", f"/v1/runs/{RUN}/wait"):
            return httpx.Response(200, json=self.body())
        if request.method == "POST" and path == f"/v1/runs/{RUN}/tool-results":
            body = json.loads(request.content)
            self.submissions.append(body)
            for r in body["results"]:
                self.answered[r["tool_call_id"]] = r["output"]
            return httpx.Response(200, json={"run": self.body(), "accepted": [], "resumed": False})
        if request.method == "POST" and path == f"/v1/runs/{RUN}/approvals":
            for d in json.loads(request.content)["decisions"]:
                self.decisions.append(d)
                call = self.gated.pop(d["tool_call_id"])
                assert d["arguments_hash"] == call["arguments_hash"]
                if d["action"] == "approve":
                    args = d.get("arguments", call["arguments"])
                    self.open[call["id"]] = {
                        "id": call["id"],
                        "name": call["name"],
                        "arguments": args,
                    }
                else:
                    self.answered[call["id"]] = {"rejected": d["message"]}
            return httpx.Response(200, json=self.body())
        if request.method == "GET" and path == f"/v1/runs/{RUN}/approvals":
            items = [{"run_id": RUN, "tool_call_id": c["id"], **c} for c in self.gated.values()]
            return httpx.Response(200, json={"data": items})
        return httpx.Response(404, json={"type": "/problems/not-found", "detail": path})


def registry(executed: list[tuple[str, Any]]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def look(q: str) -> str:
        executed.append(("look", q))
        return f"saw {q}"

    @tools.tool
    def pay(amount: int) -> str:
        executed.append(("pay", amount))
        return f"paid {amount}"

    return tools


@pytest.fixture
def fake() -> FakeRun:
    return FakeRun()


def sync_client(fake: FakeRun) -> Client:
    return Client("http://fake.test", "k", transport=httpx.MockTransport(fake.handle))


def test_without_on_approval_the_ungated_calls_run_and_the_run_is_left_to_a_person(
    fake: FakeRun,
) -> None:
    executed: list[tuple[str, Any]] = []
    with sync_client(fake) as client:
        run = client.execute(RUN, registry(executed))
    assert executed == [("look", "x")]  # `pay` never reached the tool
    assert run.status == RunStatus.REQUIRES_ACTION
    assert isinstance(run.required_action, ApproveToolCalls)
    assert [a.id for a in run.pending_approvals] == ["tc_pay"]
    assert run.pending_tool_calls == [] and fake.decisions == []


@pytest.mark.parametrize(
    ("answer", "decision", "executed_pay"),
    [
        (Approve(), {"action": "approve"}, [("pay", 500)]),
        ({"amount": 50}, {"action": "approve", "arguments": {"amount": 50}}, [("pay", 50)]),
        (Approve({"amount": 7}), {"action": "approve", "arguments": {"amount": 7}}, [("pay", 7)]),
        (Reject("too much"), {"action": "reject", "message": "too much"}, []),
    ],
)
def test_on_approval_decides_and_only_an_approved_call_is_executed(
    fake: FakeRun, answer: Any, decision: dict[str, Any], executed_pay: list[Any]
) -> None:
    executed: list[tuple[str, Any]] = []
    asked: list[ApprovalCall] = []

    def on_approval(call: ApprovalCall) -> Any:
        asked.append(call)
        assert ("pay", 500) not in executed
        return answer

    with sync_client(fake) as client:
        run = client.execute(RUN, registry(executed), on_approval=on_approval)
    assert [(c.id, c.name, c.arguments, c.arguments_hash) for c in asked] == [
        ("tc_pay", "pay", {"amount": 500}, "h-pay")
    ]
    expected = {"tool_call_id": "tc_pay", "arguments_hash": "h-pay", **decision}
    assert fake.decisions == [expected]
    assert sorted(executed) == sorted([("look", "x"), *executed_pay])
    assert run.status == RunStatus.COMPLETED


def test_an_undecided_call_is_asked_about_once_then_left_to_a_person(fake: FakeRun) -> None:
    asked: list[str] = []

    def on_approval(call: ApprovalCall) -> None:
        asked.append(call.id)

    with sync_client(fake) as client:
        run = client.execute(RUN, registry([]), on_approval=on_approval)
    assert asked == ["tc_pay"] and fake.decisions == []
    assert run.status == RunStatus.REQUIRES_ACTION and run.pending_approvals


def test_an_async_on_approval_serves_the_sync_client_too(fake: FakeRun) -> None:
    async def on_approval(call: ApprovalCall) -> Approve:
        return Approve()

    executed: list[tuple[str, Any]] = []
    with sync_client(fake) as client:
        run = client.execute(RUN, registry(executed), on_approval=on_approval)
    assert run.status == RunStatus.COMPLETED and ("pay", 500) in executed


async def test_the_async_client_takes_sync_and_async_callbacks() -> None:
    for make in ("sync", "async"):
        fake = FakeRun()

        def plain(call: ApprovalCall) -> Reject:
            return Reject("no")

        async def coroutine(call: ApprovalCall) -> Reject:
            return Reject("no")

        transport = httpx.MockTransport(fake.handle)
        async with AsyncClient("http://fake.test", "k", transport=transport) as client:
            callback = plain if make == "sync" else coroutine
            run = await client.execute(RUN, registry([]), on_approval=callback)
        assert run.status == RunStatus.COMPLETED
        assert fake.answered["tc_pay"] == {"rejected": "no"}


def test_a_wrong_answer_of_on_approval_is_refused_before_anything_is_sent(fake: FakeRun) -> None:
    with sync_client(fake) as client, pytest.raises(InvalidInput, match="on_approval answered"):
        client.execute(RUN, registry([]), on_approval=lambda call: True)
    assert fake.decisions == []


def test_approve_reject_and_get(fake: FakeRun) -> None:
    with sync_client(fake) as client:
        (pending,) = client.approvals.get(RUN)
        assert isinstance(pending, Approval) and pending.is_pending
        assert (pending.tool_call_id, pending.arguments_hash) == ("tc_pay", "h-pay")
        with pytest.raises(InvalidInput, match="arguments hash"):
            client.approvals.approve(RUN, "tc_pay", "")
        with pytest.raises(InvalidInput, match="JSON object"):
            client.approvals.approve(RUN, "tc_pay", "h-pay", arguments=[1])  # type: ignore[arg-type]
        run = client.approvals.approve(RUN, "tc_pay", "h-pay", arguments={"amount": 1})
        assert run.pending_approvals == []
    assert fake.decisions == [
        {
            "tool_call_id": "tc_pay",
            "arguments_hash": "h-pay",
            "action": "approve",
            "arguments": {"amount": 1},
        }
    ]
    other = FakeRun()
    with sync_client(other) as client:
        client.approvals.reject(RUN, "tc_pay", "h-pay", "not today")
    assert other.decisions[0]["message"] == "not today"
