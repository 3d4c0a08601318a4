"""Bulk decisions from the approvals inbox, through the dashboard's HTTP interface on both
databases: several calls approved or rejected after one confirmation listing them, each
recorded as its own decision naming the person; a call decided meanwhile, or with a stale
hash, is reported while the others are decided; a malformed form, a missing CSRF token or
a viewer's post change nothing."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from app.approvals import policies
from app.approvals.service import ApprovalService
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.dashboard import bulk
from app.service.runs import RunService
from app.service.schemas import DecisionsIn
from app.tenancy.operators import OperatorService
from tests.dashboard.test_approvals_inbox import refund_run, shown, text
from tests.dashboard.test_people import browser, signed_in
from tests.helpers import snapshot
from tests.people import person


def choice(call: Any, digest: str | None = None) -> str:
    """The bulk form's value for a call (the hash of its arguments, or `digest`)."""
    return f"{shown(call)}:{digest or policies.arguments_hash(call.arguments)}"


async def post(client: httpx.AsyncClient, csrf: str, **fields: Any) -> httpx.Response:
    return await client.post("/admin/approvals/bulk", data={"csrf_token": csrf, **fields})


async def decisions(service: RunService, run_id: str) -> list[Any]:
    kinds = ("tool_call.approved", "tool_call.rejected")
    return [e for e in await service.store.events(run_id) if e.type in kinds]


async def test_a_person_approves_three_calls_with_one_confirmation(
    app: FastAPI, service: RunService, people: OperatorService
) -> None:
    made = [await refund_run(service, lookup=False) for _ in range(3)]
    calls = [gated for _, gated in made]
    await person(people, "alice", role="operator")
    async with browser(app) as alice:
        csrf = await signed_in(alice, "alice")
        inbox = text(await alice.get("/admin/approvals"))
        assert inbox.count('form="bulk"') == 3 and 'id="bulk-approve"' in inbox
        ticked = [choice(c) for c in calls]
        asked = await post(alice, csrf, action="approve", call=ticked)
        assert asked.status_code == 200
        page = text(asked)
        assert "Approve these 3 tool calls?" in page and "user:alice" in page
        for c in calls:
            assert f"/admin/runs/{c.run_id}" in page
        assert page.count('"amount":30') == 3 and page.count("awaits a decision") == 3
        assert [await decisions(service, c.run_id) for c in calls] == [[], [], []]
        assert re.findall(r'name="call" value="([^"]+)"', asked.text) == ticked

        done = await post(alice, csrf, action="approve", call=ticked, confirmed="yes")
        assert done.status_code == 200, done.text
        assert "3 of 3 tool calls approved" in text(done)
        assert text(done).count(">approved<") == 3
    for c in calls:
        (approved,) = await decisions(service, c.run_id)
        assert (approved.type, approved.actor) == ("tool_call.approved", "user:alice")
        assert approved.data["tool_call_id"] == c.call_id
        view = await service.get_run(c.run_id, scope=Scope.ALL)
        assert [p.call_id for p in view.pending if not p.awaits_approval] == [c.call_id]


async def test_calls_decided_meanwhile_or_stale_are_reported_and_the_others_decided(
    admin: httpx.AsyncClient, service: RunService, approvals: ApprovalService
) -> None:
    (_, fine), (_, stale), (_, meanwhile) = [await refund_run(service) for _ in range(3)]
    other_args = policies.arguments_hash({"order": "A-1042", "amount": 3000})
    ticked = [choice(fine), choice(stale, other_args), choice(meanwhile)]
    csrf: str = admin.csrf  # type: ignore[attr-defined]
    asked = await post(admin, csrf, action="reject", message="not without a photo", call=ticked)
    assert "Reject these 3 tool calls?" in text(asked) and "not without a photo" in text(asked)

    first = {
        "tool_call_id": meanwhile.call_id,
        "arguments_hash": policies.arguments_hash(meanwhile.arguments),
        "action": "approve",
    }
    body = DecisionsIn.model_validate({"decisions": [first]})
    await approvals.decide(meanwhile.run_id, body, actor="user:bob", scope=Scope.ALL)
    before = await snapshot(service.store, meanwhile.run_id)

    done = await post(
        admin, csrf, action="reject", message="not without a photo", call=ticked, confirmed="yes"
    )
    assert done.status_code == 200
    report = text(done)
    assert "1 of 3 tool calls rejected" in report and "2 could not be decided" in report
    assert "other arguments than the hash names" in report
    assert "no longer waiting: approved by user:bob" in report
    (rejected,) = await decisions(service, fine.run_id)
    assert rejected.type == "tool_call.rejected" and rejected.actor.startswith("key:")
    assert rejected.data["message"] == "not without a photo"
    assert await decisions(service, stale.run_id) == []
    assert await snapshot(service.store, meanwhile.run_id) == before


async def test_a_bulk_reject_resumes_runs_with_nothing_else_to_wait_for(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    made = [await refund_run(service, lookup=False) for _ in range(2)]
    ticked = [choice(c) for _, c in made]
    csrf: str = admin.csrf  # type: ignore[attr-defined]
    done = await post(admin, csrf, action="reject", message="no", call=ticked, confirmed="yes")
    assert "2 of 2 tool calls rejected" in text(done)
    for view, c in made:  # (the refund was the round's only call: nothing left to wait for)
        after = await service.get_run(view.record.id, scope=Scope.ALL)
        assert after.record.status == RunStatus.QUEUED
        (rejected,) = await decisions(service, c.run_id)
        assert rejected.type == "tool_call.rejected" and rejected.data["message"] == "no"


async def test_a_malformed_bulk_form_is_the_inbox_with_its_error_and_changes_nothing(
    admin: httpx.AsyncClient, service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    view, call = await refund_run(service)
    before = await snapshot(service.store, view.record.id)
    good = choice(call)
    other = "1" if good.endswith("0") else "0"  # (another hash for the same call)
    csrf: str = admin.csrf  # type: ignore[attr-defined]
    monkeypatch.setattr(bulk, "MAX_CALLS", 2)
    for fields, error in [
        ({"action": "approve"}, "Tick at least one tool call"),
        ({"action": "launch", "call": good}, "choose Approve selected or Reject selected"),
        ({"call": good}, "choose Approve selected or Reject selected"),
        ({"action": "approve", "call": "run_x:1"}, "expected run id:round:position"),
        ({"action": "approve", "call": good.upper()}, "expected run id:round:position"),
        ({"action": "reject", "call": good, "message": "  "}, "say why in the message"),
        ({"action": "reject", "call": good, "message": "a\x00b"}, "message:"),
        (
            {"action": "approve", "call": [good, "a:1:2:" + "0" * 64, "b:1:2:" + "0" * 64]},
            "At most 2",
        ),
        ({"action": "approve", "call": [good, good[:-1] + other]}, "ticked twice"),
    ]:
        for confirmed in ("", "yes"):
            refused = await post(admin, csrf, confirmed=confirmed, tool="refund", **fields)
            assert refused.status_code == 422, (fields, refused.text)
            page = text(refused)
            assert "Nothing was decided" in page and error in page, (fields, page[:3000])
            assert "<h1>Approvals" in page and 'value="refund"' in page  # (the filter kept)
    kept = await post(admin, csrf, action="reject", call=good, message="", tool="refund")
    assert re.search(
        rf'value="{re.escape(good)}" form="bulk" id="[^"]+" class="select" checked', kept.text
    )
    assert await snapshot(service.store, view.record.id) == before


async def test_without_csrf_or_as_a_viewer_nothing_is_decided(
    app: FastAPI, admin: httpx.AsyncClient, service: RunService, people: OperatorService
) -> None:
    view, call = await refund_run(service)
    before = await snapshot(service.store, view.record.id)
    fields = {"action": "approve", "call": choice(call), "confirmed": "yes"}
    assert (await admin.post("/admin/approvals/bulk", data=fields)).status_code == 403
    await person(people, "vera", role="viewer")
    async with browser(app) as vera:
        csrf = await signed_in(vera, "vera")
        page = text(await vera.get("/admin/approvals"))
        assert 'id="read-only"' in page and 'id="bulk"' not in page and 'form="bulk"' not in page
        refused = await post(vera, csrf, **fields)
        assert refused.status_code == 403 and "runs:approve" in text(refused)
    assert await snapshot(service.store, view.record.id) == before
