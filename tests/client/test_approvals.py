"""The client's approvals against the real service (a loopback port, workers in-process,
both databases): the inline executor never runs a gated call before it is approved
(checked in the tool itself), `on_approval` approves, edits or rejects and the model sees
it; `client.approvals` lists and decides; `agentrun runs approvals|approve|reject`."""

from __future__ import annotations

from typing import Any

import pytest

from agentrun_client import (
    ApprovalCall,
    Approve,
    ApproveToolCalls,
    Conflict,
    Reject,
    RunStatus,
    ToolRegistry,
)
from tests.client.conftest import Live, scripted
from tests.client.test_cli import cli

#: `pay` is gated above 100; the model pays 5, then 500, then reports what it got.
SCRIPT = scripted(
    {
        "tool_calls": [
            {"name": "pay", "arguments": {"amount": 5}},
            {"name": "pay", "arguments": {"amount": 500}},
        ]
    },
    {"text": "done"},
)
GATE = {"when": {"properties": {"amount": {"exclusiveMinimum": 100}}}}


def registry(paid: list[int]) -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    return tools


def gated_definitions(tools: ToolRegistry) -> list[dict[str, Any]]:
    return [{**d, "approval": GATE} for d in tools.definitions()]


def tool_results_seen(live: Live, run_id: str) -> list[Any]:
    """What the model received as the results of its calls (from the run's messages)."""
    with live.client() as client:
        items = [
            item
            for m in client.runs.messages(run_id)
            if isinstance(m.message.content, list)
            for item in m.message.content
        ]
    return [i for i in items if i.get("type") == "toolresult"]


def test_without_on_approval_the_gated_call_waits_for_a_person(live: Live) -> None:
    paid: list[int] = []
    tools = registry(paid)
    with live.client() as client:
        run = client.runs.create(prompt="pay", model=SCRIPT, tools=gated_definitions(tools))
        waiting = client.execute(run.id, tools, deadline=None)
        assert paid == [5]  # the ungated call ran; the gated one never reached the tool
        assert isinstance(waiting.required_action, ApproveToolCalls)
        (gated,) = waiting.pending_approvals
        assert gated.arguments == {"amount": 500}
        listed = [a for a in client.approvals.list() if a.run_id == run.id]
        assert [(a.tool_call_id, a.arguments_hash) for a in listed] == [
            (gated.id, gated.arguments_hash)
        ]
        with pytest.raises(Conflict) as stale:
            client.approvals.approve(run.id, gated.id, "0" * 64)
        assert stale.value.code == "approval-stale"
        client.approvals.approve(run.id, gated.id, gated.arguments_hash)
        client.approvals.approve(run.id, gated.id, gated.arguments_hash)  # the same: a no-op
        with pytest.raises(Conflict) as other:
            client.approvals.reject(run.id, gated.id, gated.arguments_hash, "no")
        assert other.value.code in ("approval-conflict", "run-state-conflict")
        done = client.execute(run.id, tools)
        assert done.status == RunStatus.COMPLETED and paid == [5, 500]
        (decided,) = client.approvals.get(run.id)
        assert decided.status == "approved" and decided.decided_by


@pytest.mark.parametrize(
    ("answer", "paid_after", "model_sees"),
    [
        (Approve(), [5, 500], "paid 500"),
        ({"amount": 50}, [5, 50], "paid 50"),
        (Reject("over the limit"), [5], "over the limit"),
    ],
)
def test_on_approval_decides_and_the_model_sees_it(
    live: Live, answer: Any, paid_after: list[int], model_sees: str
) -> None:
    paid: list[int] = []
    tools = registry(paid)
    asked: list[ApprovalCall] = []

    def on_approval(call: ApprovalCall) -> Any:
        asked.append(call)
        assert 500 not in paid
        return answer

    with live.client() as client:
        run = client.runs.create(prompt="pay", model=SCRIPT, tools=gated_definitions(tools))
        done = client.execute(run.id, tools, on_approval=on_approval)
    assert done.status == RunStatus.COMPLETED, done
    assert [c.arguments for c in asked] == [{"amount": 500}]
    assert sorted(paid) == sorted(paid_after)
    assert model_sees in str(tool_results_seen(live, run.id))


def test_two_calls_sharing_an_id_are_decided_by_position(live: Live) -> None:
    """A model that repeats a call id: each decision names its call's `position`."""
    twins = scripted(
        {
            "tool_calls": [
                {"id": "dup", "name": "pay", "arguments": {"amount": 500}},
                {"id": "dup", "name": "pay", "arguments": {"amount": 600}},
            ]
        },
        {"text": "done"},
    )
    paid: list[int] = []
    tools = registry(paid)
    with live.client() as client:
        run = client.runs.create(prompt="pay", model=twins, tools=gated_definitions(tools))
        waiting = client.execute(run.id, tools, deadline=None)
        first, second = waiting.pending_approvals
        assert (first.position, second.position) == (0, 1)
        client.approvals.reject(run.id, "dup", second.arguments_hash, "no", position=1)
        asked: list[ApprovalCall] = []
        done = client.execute(run.id, tools, on_approval=lambda c: asked.append(c) or Approve())
    assert [c.position for c in asked] == [0]
    assert done.status == RunStatus.COMPLETED and paid == [500]


def test_the_command_line_tells_twin_calls_apart_by_position(live: Live) -> None:
    """Two pending calls of a round share an id: the command asks for `--position`
    rather than guess, decides the one named, and a repeat of it is a no-op."""
    twins = scripted(
        {
            "tool_calls": [
                {"id": "dup", "name": "pay", "arguments": {"amount": 500}},
                {"id": "dup", "name": "pay", "arguments": {"amount": 600}},
            ]
        },
        {"text": "done"},
    )
    tools = registry([])
    with live.client() as client:
        run = client.runs.create(prompt="pay", model=twins, tools=gated_definitions(tools))
        client.execute(run.id, tools)
    ambiguous = cli(live, "runs", "reject", run.id, "dup", "--message", "no")
    assert ambiguous.code == 2 and "--position (0, 1)" in ambiguous.err
    named = cli(live, "runs", "reject", run.id, "dup", "--message", "no", "--position", "1")
    assert named.code == 0, named.err
    again = cli(live, "runs", "reject", run.id, "dup", "--message", "no", "--position", "1")
    assert again.code == 0, again.err
    mine = cli(live, "runs", "approvals", run.id, "--json").json()["data"]
    assert [(a["position"], a["status"]) for a in mine] == [(0, "pending"), (1, "rejected")]


def test_the_command_line_lists_approves_and_rejects(live: Live) -> None:
    tools = registry([])
    with live.client() as client:
        runs = [
            client.runs.create(prompt="pay", model=SCRIPT, tools=gated_definitions(tools))
            for _ in range(2)
        ]
        calls = []
        for run in runs:
            waiting = client.execute(run.id, tools)
            calls.append(waiting.pending_approvals[0])
    listed = cli(live, "runs", "approvals")
    assert listed.code == 0, listed.err
    header, *rows = listed.out.splitlines()
    assert header.split() == ["RUN", "CALL", "TOOL", "STATUS", "AGE", "ARGUMENTS"]
    assert {r.split()[0] for r in rows} >= {r.id for r in runs}
    assert any('{"amount": 500}' in r for r in rows)

    edited = cli(live, "runs", "approve", runs[0].id, calls[0].id, "--arguments", '{"amount": 1}')
    assert edited.code == 0, edited.err
    assert edited.out.startswith(f'approved {calls[0].id} (pay {{"amount": 500}})')
    bad = cli(live, "runs", "approve", runs[0].id, calls[0].id, "--arguments", "[1]")
    assert bad.code == 2 and "a JSON object" in bad.err
    unknown = cli(live, "runs", "reject", runs[1].id, "nope", "--message", "x")
    assert unknown.code == 2 and "no gated tool call 'nope'" in unknown.err
    stale = cli(
        live, "runs", "reject", runs[1].id, calls[1].id, "--message", "x",
        "--arguments-hash", "f" * 64,
    )  # fmt: skip
    assert stale.code == 1 and "approval-stale" in stale.err
    rejected = cli(live, "runs", "reject", runs[1].id, calls[1].id, "--message", "no", "--json")
    assert rejected.code == 0, rejected.err
    assert rejected.json()["id"] == runs[1].id
    mine = cli(live, "runs", "approvals", runs[1].id, "--json").json()["data"]
    assert [(a["status"], a["message"]) for a in mine] == [("rejected", "no")]
