"""Approvals over HTTP on both back ends: a gated call reaches no executor before its
approval (the run's required action, its events, the queue); approve, reject and edit
each reach the model as documented (what the model's next request carries); stale,
conflicting, unknown and foreign decisions are refused; a timed-out approval takes the
run's default; the inbox of pending approvals."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from app.approvals import policies
from app.approvals.service import ApprovalService
from app.clock import SYSTEM_CLOCK, FakeClock
from app.core import ToolResult
from app.core.content import Json, Text
from app.core.scope import Scope
from app.providers.base import ModelRequest
from app.service import convert
from app.service.runs import RunService
from app.settings import Settings
from app.store.runs import RunStore
from tests.api.test_runs_api import assert_problem, body

PAY = {
    "name": "pay",
    "description": "Pay an amount",
    "parameters": {
        "type": "object",
        "properties": {"amount": {"type": "number"}, "to": {"type": "string"}},
        "required": ["amount"],
    },
    "approval": {"when": {"properties": {"amount": {"exclusiveMinimum": 100}}}},
}
LOOKUP = {"name": "lookup", "parameters": {"type": "object"}}


def script(*calls: dict[str, Any]) -> dict[str, Any]:
    return {
        "provider": "scripted",
        "name": "demo",
        "script": [{"tool_calls": list(calls)}, {"text": "done"}],
    }


def gated_body(**overrides: Any) -> dict[str, Any]:
    """A round of three calls: `pay` 500 (gated), `pay` 20 (not), `lookup` (not)."""
    doc = body(
        model=script(
            {"name": "pay", "arguments": {"amount": 500, "to": "bob"}},
            {"name": "pay", "arguments": {"amount": 20, "to": "amy"}},
            {"name": "lookup", "arguments": {"q": "x"}},
        ),
        tools=[PAY, LOOKUP],
    )
    doc.update(overrides)
    return doc


class Recorder:
    """The providers of a driver, recording every request the model is sent."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.requests: list[ModelRequest] = []

    def __call__(self, spec: Any) -> Any:
        from app.worker.providers import make_provider

        inner = make_provider(spec, self.settings, clock=SYSTEM_CLOCK)
        recorder = self

        class Recording:
            name = inner.name

            async def complete(self, request: ModelRequest) -> Any:
                recorder.requests.append(request)
                return await inner.complete(request)

        return Recording()

    def results(self) -> list[ToolResult]:
        """The tool results the last request carried to the model."""
        prompt = self.requests[-1].prompt
        return [c for c in getattr(prompt, "content", ()) if isinstance(c, ToolResult)]


async def drive(store: RunStore, settings: Settings, providers: Callable[[Any], Any]) -> Any:
    from app.service.tokens import new_key
    from app.worker.driver import RunDriver

    key = await store.secret("callback_key", new_key)
    driver = RunDriver(store, settings, "test-worker", providers, key, clock=SYSTEM_CLOCK)
    now = datetime.now(UTC)
    record = await store.claim("test-worker", now, now + timedelta(seconds=30))
    assert record is not None, "no due run to claim"
    return await driver.drive(record)


async def suspended(
    client: httpx.AsyncClient, store: RunStore, doc: dict[str, Any], recorder: Recorder
) -> dict[str, Any]:
    created = await client.post("/v1/runs", json=doc)
    assert created.status_code == 201, created.text
    await drive(store, recorder.settings, recorder)
    got = (await client.get(f"/v1/runs/{created.json()['id']}")).json()
    assert got["status"] == "requires_action", got
    return got  # type: ignore[no-any-return]


@pytest.fixture
def recorder(client: httpx.AsyncClient) -> Recorder:
    return Recorder(client.app.state.settings)  # type: ignore[attr-defined]


async def events(client: httpx.AsyncClient, run_id: str) -> list[dict[str, Any]]:
    return (await client.get(f"/v1/runs/{run_id}/events")).json()["data"]  # type: ignore[no-any-return]


def decision(approval: dict[str, Any], action: str = "approve", **kw: Any) -> dict[str, Any]:
    return {
        "tool_call_id": approval["id"],
        "arguments_hash": approval["arguments_hash"],
        "action": action,
        **kw,
    }


async def decide(client: httpx.AsyncClient, run_id: str, *decisions: dict[str, Any]) -> Any:
    return await client.post(f"/v1/runs/{run_id}/approvals", json={"decisions": list(decisions)})


def results_of(run: dict[str, Any], output: str = "ok") -> dict[str, Any]:
    calls = [c for c in run["required_action"]["tool_calls"] if not c["answered"]]
    return {"results": [{"tool_call_id": c["id"], "output": output} for c in calls]}


# --- suspension: gated calls reach no executor ----------------------------------------------


async def test_gated_call_is_listed_for_approval_only(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, gated_body(), recorder)
    action = run["required_action"]
    assert action["type"] == "approve_tool_calls"
    (approval,) = action["approvals"]
    assert approval["name"] == "pay" and approval["arguments"] == {"amount": 500, "to": "bob"}
    assert approval["arguments_hash"] == policies.arguments_hash({"amount": 500, "to": "bob"})
    assert [c["name"] for c in action["tool_calls"]] == ["pay", "lookup"]
    assert action["tool_calls"][0]["arguments"]["amount"] == 20
    assert action["callback_url"]
    assert run["waiting_reason"] == {
        "type": "approval",
        "round": 1,
        "call_ids": [c["id"] for c in action["tool_calls"]],
        "approvals": [approval["id"]],
    }
    log = await events(client, run["id"])
    (handed,) = [e for e in log if e["type"] == "run.requires_action"]
    assert [c["id"] for c in handed["data"]["tool_calls"]] == [
        c["id"] for c in action["tool_calls"]
    ]
    (required,) = [e for e in log if e["type"] == "run.approval_required"]
    assert required["data"]["approvals"] == [approval]
    # A result for the gated call is refused: it is not pending for executors.
    refused = await client.post(
        f"/v1/runs/{run['id']}/tool-results",
        json={"results": [{"tool_call_id": approval["id"], "output": "paid"}]},
    )
    assert_problem(refused, 422, "tool-call-not-pending")
    # The open calls answered: the run still waits, for the decision.
    answered = await client.post(f"/v1/runs/{run['id']}/tool-results", json=results_of(run))
    assert answered.status_code == 200, answered.text
    after = answered.json()["run"]
    assert after["status"] == "requires_action" and not answered.json()["resumed"]
    assert after["waiting_reason"]["approvals"] == [approval["id"]]
    assert after["waiting_reason"]["call_ids"] == []


async def test_a_run_without_policies_is_as_before(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    doc = gated_body(tools=[{**PAY, "approval": None}, LOOKUP])
    doc["tools"][0].pop("approval")
    run = await suspended(client, store, doc, recorder)
    assert run["required_action"]["type"] == "submit_tool_results"
    assert run["waiting_reason"]["type"] == "tool_results"
    got = (await client.get(f"/v1/runs/{run['id']}/approvals")).json()
    assert got == {"data": [], "next_cursor": None}
    config = await store.get(run["id"], scope=Scope.ALL)
    assert config is not None and "approval" not in config.config["tools"][0]


async def test_queue_executors_never_lease_a_gated_call_before_approval(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, gated_body(tool_queue="q"), recorder)
    (approval,) = run["required_action"]["approvals"]

    async def lease() -> list[dict[str, Any]]:
        got = await client.post("/v1/queues/q/lease", json={"wait": 0, "limit": 10})
        assert got.status_code == 200, got.text
        return got.json()["calls"]  # type: ignore[no-any-return]

    first = await lease()
    assert sorted(c["name"] for c in first) == ["lookup", "pay"]
    assert approval["id"] not in {c["tool_call_id"] for c in first}
    assert await lease() == []
    edited = {"amount": 90, "to": "bob"}
    done = await decide(client, run["id"], decision(approval, arguments=edited))
    assert done.status_code == 200, done.text
    (released,) = await lease()
    assert released["tool_call_id"] == approval["id"] and released["arguments"] == edited


# --- decisions reach the model ---------------------------------------------------------------


def _texts(result: ToolResult) -> str:
    return "".join(
        c.text if isinstance(c, Text) else str(c.value)
        for c in result.content
        if isinstance(c, Text | Json)
    )


@pytest.mark.parametrize("action", ["approve", "reject", "edit"])
async def test_each_decision_reaches_the_model(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder, action: str
) -> None:
    run = await suspended(client, store, gated_body(), recorder)
    rid = run["id"]
    (approval,) = run["required_action"]["approvals"]
    assert (await client.post(f"/v1/runs/{rid}/tool-results", json=results_of(run))).is_success
    if action == "reject":
        kw: dict[str, Any] = {"message": "too much money"}
        got = await decide(client, rid, decision(approval, "reject", **kw))
        assert got.status_code == 200, got.text
        assert got.json()["status"] == "queued"  # nothing else to wait for: resumed
        again = await decide(client, rid, decision(approval, "reject", **kw))
        assert again.status_code == 200, again.text  # a retry after the resume: accepted
        other = await decide(client, rid, decision(approval))
        assert_problem(other, 409, "approval-conflict")  # (decided otherwise, in any status)
    else:
        edited = {"amount": 120, "to": "carol"}
        kw = {"arguments": edited} if action == "edit" else {}
        got = await decide(client, rid, decision(approval, **kw))
        assert got.status_code == 200, got.text
        after = got.json()
        assert after["required_action"]["type"] == "submit_tool_results"
        (released,) = [c for c in after["required_action"]["tool_calls"] if not c["answered"]]
        assert released["id"] == approval["id"]
        assert released["arguments"] == (edited if action == "edit" else approval["arguments"])
        log = await events(client, rid)
        handed = [e for e in log if e["type"] == "run.requires_action"]
        assert [c["id"] for c in handed[-1]["data"]["tool_calls"]] == [approval["id"]]
        assert handed[-1]["data"]["callback_url"] == after["required_action"]["callback_url"]
        (approved,) = [e for e in log if e["type"] == "tool_call.approved"]
        assert approved["actor"] and approved["data"]["arguments"] == approval["arguments"]
        assert approved["data"].get("executed_arguments") == kw.get("arguments")
        paid = {"results": [{"tool_call_id": approval["id"], "output": "paid"}]}
        resumed = await client.post(f"/v1/runs/{rid}/tool-results", json=paid)
        assert resumed.json()["resumed"], resumed.text
    await drive(store, recorder.settings, recorder)
    results = recorder.results()
    assert len(results) == 3
    first = results[0]
    if action == "reject":
        assert first.is_error and _texts(first) == "too much money"
    elif action == "edit":  # (the model is told what ran: docs/reference.md, Approvals)
        note = '{"amount":120,"to":"carol"}'
        assert not first.is_error and _texts(first) == "paid" + convert.EDITED_NOTE + note
    else:
        assert not first.is_error and _texts(first) == "paid"
    final = (await client.get(f"/v1/runs/{rid}")).json()
    assert final["status"] == "completed", final
    listed = (await client.get(f"/v1/runs/{rid}/approvals")).json()["data"]
    assert [a["status"] for a in listed] == ["rejected" if action == "reject" else "approved"]
    assert listed[0]["decided_by"] and listed[0]["decided_at"]


# --- refusals ----------------------------------------------------------------------------------


async def test_stale_conflicting_unknown_and_repeated_decisions(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    run = await suspended(client, store, gated_body(), recorder)
    rid = run["id"]
    (approval,) = run["required_action"]["approvals"]
    stale = decision(approval, arguments_hash="0" * 64)
    assert_problem(await decide(client, rid, stale), 409, "approval-stale")
    unknown = decision(approval, tool_call_id="call_9_9")
    assert_problem(await decide(client, rid, unknown), 422, "tool-call-not-pending")
    ungated = decision(approval, tool_call_id=run["required_action"]["tool_calls"][0]["id"])
    assert_problem(await decide(client, rid, ungated), 422, "tool-call-not-pending")
    bad_edit = decision(approval, arguments={"amount": "lots"})
    assert_problem(await decide(client, rid, bad_edit), 422, "invalid-request")
    assert (await events(client, rid))[-1]["type"] == "run.approval_required"  # nothing written
    first = await decide(client, rid, decision(approval, "reject", message="no"))
    assert first.status_code == 200, first.text
    seen = len(await events(client, rid))
    again = await decide(client, rid, decision(approval, "reject", message="no"))
    assert again.status_code == 200, again.text
    assert len(await events(client, rid)) == seen  # idempotent: nothing written
    other = await decide(client, rid, decision(approval))
    assert_problem(other, 409, "approval-conflict")
    assert_problem(await decide(client, rid, stale), 409, "approval-stale")


async def test_invalid_policies_are_refused_at_create(client: httpx.AsyncClient) -> None:
    bad = gated_body(tools=[{**PAY, "approval": {"when": {"type": "no-such-type"}}}])
    assert_problem(await client.post("/v1/runs", json=bad), 422, "invalid-request")
    worse = gated_body(tools=[{**PAY, "approval": "sometimes"}])
    assert_problem(await client.post("/v1/runs", json=worse), 422, "validation-error")
    run_wide = gated_body(approval={"when": {"minProperties": -1}})
    assert_problem(await client.post("/v1/runs", json=run_wide), 422, "invalid-request")


async def test_the_run_default_gates_tools_without_their_own(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    doc = gated_body(approval="always", tools=[{**PAY, "approval": "never"}, LOOKUP])
    run = await suspended(client, store, doc, recorder)
    assert [a["name"] for a in run["required_action"]["approvals"]] == ["lookup"]


# --- timeout and the inbox ---------------------------------------------------------------------


@pytest.mark.parametrize("on_timeout", ["reject", "approve"])
async def test_a_timed_out_approval_takes_the_run_default(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder, on_timeout: str
) -> None:
    doc = gated_body(approval_timeout=60, approval_on_timeout=on_timeout)
    run = await suspended(client, store, doc, recorder)
    (approval,) = run["required_action"]["approvals"]
    settings = recorder.settings
    now = ApprovalService(RunService(store, settings))
    assert await now.time_out() == []  # not due yet
    later = ApprovalService(
        RunService(store, settings, clock=FakeClock(datetime.now(UTC) + timedelta(minutes=2)))
    )
    assert await later.time_out() == [run["id"]]
    log = await events(client, run["id"])
    kind = "tool_call.rejected" if on_timeout == "reject" else "tool_call.approved"
    (decided,) = [e for e in log if e["type"] == kind]
    assert decided["actor"] == "system:approval-timeout"
    listed = (await client.get(f"/v1/runs/{run['id']}/approvals")).json()["data"]
    assert listed[0]["decided_by"] == "system:approval-timeout"
    assert listed[0]["status"] == ("rejected" if on_timeout == "reject" else "approved")
    assert listed[0]["tool_call_id"] == approval["id"]


async def test_the_inbox_lists_pending_approvals_newest_first(
    client: httpx.AsyncClient, store: RunStore, recorder: Recorder
) -> None:
    runs = [await suspended(client, store, gated_body(), recorder) for _ in range(3)]
    page = (await client.get("/v1/approvals", params={"limit": 2})).json()
    assert [a["run_id"] for a in page["data"]] == [runs[2]["id"], runs[1]["id"]]
    assert page["data"][0]["status"] == "pending" and page["next_cursor"]
    rest = (await client.get("/v1/approvals", params={"cursor": page["next_cursor"]})).json()
    assert [a["run_id"] for a in rest["data"]] == [runs[0]["id"]] and rest["next_cursor"] is None
    (approval,) = runs[1]["required_action"]["approvals"]
    assert (await decide(client, runs[1]["id"], decision(approval))).status_code == 200
    await client.post(f"/v1/runs/{runs[0]['id']}/cancel")
    left = (await client.get("/v1/approvals")).json()["data"]
    assert [a["run_id"] for a in left] == [runs[2]["id"]]
    bad = await client.get("/v1/approvals", params={"cursor": "bm9wZQ"})
    assert_problem(bad, 422, "invalid-request")
