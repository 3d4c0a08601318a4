"""The approvals inbox and the run page's approvals, through the dashboard's HTTP
interface on both databases: what the pages list, each decision (approve, edit, reject)
through its confirmation step, and the refusals (a form that does not parse, a stale hash,
a call decided already, no CSRF token), which change nothing."""

from __future__ import annotations

import html
import re
from typing import Any

import httpx

from app.approvals import policies
from app.core.lifecycle import RunStatus
from app.service.runs import RunService, RunView
from tests.helpers import ADD_TOOL, snapshot, suspended_run

#: `add` calls with `a` of 3 or more wait for approval: of the run's two, the second.
GATED_ADD = {**ADD_TOOL, "approval": {"when": {"properties": {"a": {"minimum": 3}}}}}


async def gated_run(service: RunService) -> tuple[RunView, Any]:
    """A run suspended with `add(1, 2)` open and `add(3, 4)` awaiting approval."""
    view = await suspended_run(service, tools=[GATED_ADD])
    (gated,) = [c for c in view.pending if c.awaits_approval]
    assert gated.arguments == {"a": 3, "b": 4}
    return view, gated


def text(response: httpx.Response) -> str:
    return html.unescape(response.text)


async def decide(
    client: httpx.AsyncClient, run_id: str, verb: str, data: dict[str, str], *, confirm: bool
) -> httpx.Response:
    form = {"csrf_token": client.csrf, **data}  # type: ignore[attr-defined]
    if confirm:
        form["confirmed"] = "yes"
    return await client.post(f"/admin/runs/{run_id}/{verb}", data=form)


def fields(call: Any, **extra: str) -> dict[str, str]:
    return {
        "call_id": call.call_id,
        "arguments_hash": policies.arguments_hash(call.arguments),
        **extra,
    }


async def events_of(service: RunService, run_id: str) -> list[Any]:
    return await service.store.events(run_id)


async def test_the_inbox_lists_gated_calls_only_and_approves_through_a_confirmation(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view, gated = await gated_run(service)
    run_id = view.record.id
    page = await admin.get("/admin/approvals")
    assert page.status_code == 200
    body = text(page)
    assert f'id="approval-{run_id}-{gated.call_id}"' in body and f"/admin/runs/{run_id}" in body
    assert '"a": 3' in body  # the arguments, indented
    ungated = next(c for c in view.pending if not c.awaits_approval)
    assert f'id="approval-{run_id}-{ungated.call_id}"' not in body
    assert 'aria-current="page" id="nav-approvals"' in body

    asked = await decide(admin, run_id, "approve", fields(gated, return_to="inbox"), confirm=False)
    assert asked.status_code == 200 and "Approve this tool call?" in text(asked)
    assert 'href="/admin/approvals"' in asked.text  # "No, go back" returns to the inbox
    assert not [e for e in await events_of(service, run_id) if e.type == "tool_call.approved"]

    done = await decide(admin, run_id, "approve", fields(gated, return_to="inbox"), confirm=True)
    assert done.status_code == 303 and done.headers["location"] == "/admin/approvals?done=approve"
    after = await admin.get(done.headers["location"])
    assert "The tool call was approved" in text(after) and 'id="no-approvals"' in after.text
    (approved,) = [e for e in await events_of(service, run_id) if e.type == "tool_call.approved"]
    assert approved.actor and approved.actor.startswith("key:")
    assert approved.data["tool_call_id"] == gated.call_id


async def test_the_run_page_shows_its_approvals_and_takes_edited_arguments(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view, gated = await gated_run(service)
    run_id = view.record.id
    page = text(await admin.get(f"/admin/runs/{run_id}"))
    assert 'id="run-approvals"' in page and f'id="edit-{run_id}-{gated.call_id}"' in page
    # The results form offers the open call only, not the gated one.
    assert page.count('name="call_id_') == 1

    before = await snapshot(service.store, run_id)
    for typed, error in [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "a JSON object"),
    ]:
        refused = await decide(
            admin, run_id, "approve", fields(gated, arguments=typed), confirm=True
        )
        assert refused.status_code == 422, refused.text
        assert error in text(refused)
        assert f'id="arguments-{run_id}-{gated.call_id}-error"' in refused.text
        assert html.escape(typed, quote=False) in refused.text  # kept for correction
    # Valid JSON that the tool's schema refuses: the service's 422, on the run page.
    wrong = await decide(
        admin, run_id, "approve", fields(gated, arguments='{"a": "x", "b": 4}'), confirm=True
    )
    assert wrong.status_code == 422 and "do not match its parameters" in text(wrong)
    assert await snapshot(service.store, run_id) == before

    edited = '{"a": 30, "b": 4}'
    asked = await decide(admin, run_id, "approve", fields(gated, arguments=edited), confirm=False)
    assert "Approve with edited arguments?" in text(asked) and '{"a":30,"b":4}' in text(asked)
    done = await decide(admin, run_id, "approve", fields(gated, arguments=edited), confirm=True)
    assert done.status_code == 303
    assert done.headers["location"] == f"/admin/runs/{run_id}?done=approve"
    (approved,) = [e for e in await events_of(service, run_id) if e.type == "tool_call.approved"]
    assert approved.data["arguments"] == {"a": 3, "b": 4}
    assert approved.data["executed_arguments"] == {"a": 30, "b": 4}


async def test_reject_needs_a_message_and_gives_it_to_the_model(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view, gated = await gated_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    empty = await decide(admin, run_id, "reject", fields(gated, message="  "), confirm=True)
    assert empty.status_code == 422 and "the model receives this message" in text(empty)
    assert await snapshot(service.store, run_id) == before
    asked = await decide(admin, run_id, "reject", fields(gated, message="too big"), confirm=False)
    assert "Reject this tool call?" in text(asked) and "too big" in text(asked)
    done = await decide(admin, run_id, "reject", fields(gated, message="too big"), confirm=True)
    assert done.status_code == 303
    (rejected,) = [e for e in await events_of(service, run_id) if e.type == "tool_call.rejected"]
    assert rejected.data["message"] == "too big"
    # Decided: the same decision again is the service's 200 (nothing written), a different
    # one its 409 (on the run page, nothing changed).
    log = await events_of(service, run_id)
    same = fields(gated, message="too big")
    assert (await decide(admin, run_id, "reject", same, confirm=True)).status_code == 303
    assert await events_of(service, run_id) == log
    again = await decide(admin, run_id, "approve", fields(gated), confirm=True)
    assert again.status_code == 409 and "already decided otherwise" in text(again)


async def test_a_repeated_approval_is_the_services_to_decide_and_edits_compare_as_json(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    """Confirming the same approval twice (a double click, a resent form) is not an error
    page; arguments equal in Python but not as JSON (4.0 and 4) are an edit."""
    view, gated = await gated_run(service)
    run_id = view.record.id
    typed = '{"b": 4.0, "a": 3}'
    first = await decide(admin, run_id, "approve", fields(gated, arguments=typed), confirm=True)
    assert first.status_code == 303, first.text
    log = await events_of(service, run_id)
    (approved,) = [e for e in log if e.type == "tool_call.approved"]
    assert approved.data["executed_arguments"] == {"a": 3, "b": 4.0}
    assert str(approved.data["executed_arguments"]["b"]) == "4.0"
    again = await decide(admin, run_id, "approve", fields(gated, arguments=typed), confirm=True)
    assert again.status_code == 303, again.text
    assert await events_of(service, run_id) == log
    plain = await decide(admin, run_id, "approve", fields(gated), confirm=True)
    assert plain.status_code == 409 and "already decided otherwise" in text(plain)


async def test_a_stale_hash_or_a_form_without_csrf_changes_nothing(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view, gated = await gated_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    stale = fields(gated)
    stale["arguments_hash"] = policies.arguments_hash({"a": 3, "b": 5})
    refused = await decide(admin, run_id, "approve", stale, confirm=True)
    assert refused.status_code == 409 and "other arguments than the hash names" in text(refused)
    for bad in ("nothex", "A" * 64, ""):
        odd = await decide(admin, run_id, "approve", {**stale, "arguments_hash": bad}, confirm=True)
        assert odd.status_code == 422 and "64 hex digits" in text(odd)
    back = await decide(admin, run_id, "approve", fields(gated, return_to="/evil"), confirm=True)
    assert back.status_code == 422
    other = {**fields(gated), "call_id": "tc_nope", "message": "x"}
    unknown = await decide(admin, run_id, "reject", other, confirm=True)
    assert unknown.status_code == 422 and "awaits no approval" in text(unknown)
    no_csrf = await admin.post(
        f"/admin/runs/{run_id}/approve", data={**fields(gated), "confirmed": "yes"}
    )
    assert no_csrf.status_code == 403
    assert await snapshot(service.store, run_id) == before
    assert view.record.status == RunStatus.REQUIRES_ACTION


async def test_the_inbox_pages_and_refuses_a_malformed_cursor(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    page = await admin.get("/admin/approvals?cursor=%%%")
    assert page.status_code == 200 and "cursor is malformed" in text(page)
    for _ in range(2):
        await gated_run(service)
    listed = text(await admin.get("/admin/approvals"))
    assert len(re.findall(r'<article class="approval card"', listed)) == 2
