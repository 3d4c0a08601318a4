"""The dashboard's actions through its one action route, in process, on both back ends:
CSRF and session checks, the confirmation step, inline validation, each action's effect
and the event log naming who did it (`app.dashboard.perform`)."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest
from fastapi import FastAPI

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from app.tenancy.keys import actor_of
from tests.dashboard.conftest import KEY, csrf_of, log_in
from tests.dashboard.helpers import act, completed_run, csrf, expired_run, parked_run
from tests.helpers import snapshot, suspended_run

ACTOR = actor_of(KEY)


# --- actions ---------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["cancel", "tool-results", "resolve", "extend", "retry"])
@pytest.mark.parametrize("token", ["missing", "wrong"])
async def test_actions_without_the_csrf_token_are_refused_and_change_nothing(
    admin: httpx.AsyncClient, service: RunService, action: str, token: str
) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    data = {
        "confirmed": "yes",
        "count": "2",
        "call_id_0": view.pending[0].call_id,
        "output_0": "3",
        "call_id_1": view.pending[1].call_id,
        "output_1": "7",
        "minutes": "60",
        "action": "fail",
    }
    if token == "wrong":
        data["csrf_token"] = csrf(admin)[:-2] + "xx"
    response = await admin.post(f"/admin/runs/{run_id}/{action}", data=data)
    assert response.status_code == 403
    assert "CSRF" in response.text
    assert await snapshot(service.store, run_id) == before


async def test_actions_without_a_session_redirect_and_change_nothing(
    anon: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    page = await anon.get("/admin/login")  # an anonymous session with a valid token
    response = await anon.post(
        f"/admin/runs/{view.record.id}/cancel",
        data={"csrf_token": csrf_of(page.text), "confirmed": "yes"},
    )
    assert response.status_code == 303
    assert response.headers["location"] == "/admin/login"
    assert await snapshot(service.store, view.record.id) == before


async def test_another_sessions_token_is_refused(
    admin: httpx.AsyncClient, app: FastAPI, service: RunService
) -> None:
    view = await suspended_run(service)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://dashboard.test") as other:
        await log_in(other)
        response = await other.post(
            f"/admin/runs/{view.record.id}/cancel",
            data={"csrf_token": csrf(admin), "confirmed": "yes"},
        )
    assert response.status_code == 403
    assert (
        await service.get_run(view.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.REQUIRES_ACTION


async def test_cancel_asks_for_confirmation_then_records_the_actor(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    confirm = await act(admin, run_id, "cancel", confirmed=False)
    assert confirm.status_code == 200
    assert "Cancel this run?" in confirm.text
    assert 'name="confirmed" value="yes"' in confirm.text
    assert 'id="confirm"' in confirm.text and 'id="back"' in confirm.text
    assert await snapshot(service.store, run_id) == before  # asking changes nothing
    done = await act(admin, run_id, "cancel")
    assert done.status_code == 303
    assert done.headers["location"] == f"/admin/runs/{run_id}?done=cancel"
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.status == RunStatus.CANCELLED
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.cancelled", ACTOR)
    page = await admin.get(done.headers["location"])
    assert "The run was cancelled." in page.text
    again = await act(admin, run_id, "cancel")
    assert again.status_code == 409
    assert "cannot cancel" in again.text


async def test_submit_tool_results_validates_json_inline(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    calls = view.pending
    fields = {"count": 2, "call_id_0": calls[0].call_id, "call_id_1": calls[1].call_id}
    bad = await act(admin, run_id, "tool-results", output_0="{not json", output_1="7", **fields)
    assert bad.status_code == 422
    assert 'id="output_0_error"' in bad.text and "not valid JSON" in bad.text
    assert "{not json</textarea>" in bad.text  # the input is kept
    assert 'aria-invalid="true" aria-describedby="output_0_error"' in bad.text
    empty = await act(admin, run_id, "tool-results", output_0="", output_1=" ", **fields)
    assert empty.status_code == 422
    assert "at least one tool call" in empty.text
    huge = await act(admin, run_id, "tool-results", output_0=str(2**70), **fields)
    assert huge.status_code == 422
    stranger = await act(
        admin, run_id, "tool-results", count=1, call_id_0="call_nope", output_0="1"
    )
    assert stranger.status_code == 422
    assert "not pending" in stranger.text
    assert await snapshot(service.store, run_id) == before


async def test_submit_tool_results_in_two_steps_records_the_actor(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    first, second = view.pending
    confirm = await act(
        admin, run_id, "tool-results", confirmed=False, count=2, call_id_0=first.call_id,
        output_0='{"sum": 3}', call_id_1=second.call_id, output_1="",
    )  # fmt: skip
    assert confirm.status_code == 200
    assert "Submit these tool results?" in confirm.text
    assert f'name="call_id_0" value="{first.call_id}"' in confirm.text
    assert 'name="output_0" value="{&#34;sum&#34;: 3}"' in confirm.text
    assert (await service.get_run(run_id, scope=Scope.ALL)).record.version == view.record.version
    done = await act(
        admin, run_id, "tool-results", count=2, call_id_0=first.call_id, output_0='{"sum": 3}'
    )
    assert done.status_code == 303
    partial = await service.get_run(run_id, scope=Scope.ALL)
    assert partial.record.status == RunStatus.REQUIRES_ACTION
    assert [c.call_id for c in partial.pending if c.result_hash is None] == [second.call_id]
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("tool_result.submitted_by_operator", ACTOR)
    page = (await admin.get(f"/admin/runs/{run_id}")).text
    assert "Already answered" in page and 'id="output_1"' not in page
    done = await act(
        admin, run_id, "tool-results", count=1, call_id_0=second.call_id, output_0='"7"',
        is_error_0="on",
    )  # fmt: skip
    assert done.status_code == 303
    resumed = await service.get_run(run_id, scope=Scope.ALL)
    assert resumed.record.status == RunStatus.QUEUED
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.resumed", ACTOR)
    calls = await service.store.tool_calls(run_id)
    assert [c.result for c in calls] == [
        {"output": {"sum": 3}, "is_error": False},
        {"output": "7", "is_error": True},
    ]


async def test_resolve_an_invalid_tool_call(admin: httpx.AsyncClient, service: RunService) -> None:
    view = await parked_run(service)
    run_id = view.record.id
    html = (await admin.get(f"/admin/runs/{run_id}")).text
    assert "Resolve the invalid tool call" in html and "<code>sub</code>" in html
    for field_id in ("r-action", "r-feedback", "r-tool", "r-reason"):
        assert f'<label for="{field_id}">' in html
    before = await snapshot(service.store, run_id)
    missing = await act(admin, run_id, "resolve", action="repair")
    assert missing.status_code == 422 and "repair needs the name" in missing.text
    nonsense = await act(admin, run_id, "resolve", action="explode")
    assert nonsense.status_code == 422
    assert await snapshot(service.store, run_id) == before
    confirm = await act(admin, run_id, "resolve", confirmed=False, action="repair", tool_name="add")
    assert "Resolve the invalid tool call?" in confirm.text
    done = await act(admin, run_id, "resolve", action="repair", tool_name="add")
    assert done.status_code == 303
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.status == RunStatus.QUEUED
    events = await service.store.events(run_id)
    resolved = [e for e in events if e.type == "run.resolved"]
    assert resolved[0].actor == ACTOR
    assert resolved[0].data["action"]["tool_name"] == "add"


async def test_resolve_with_retry_asks_the_model_again(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    run_id = (await parked_run(service)).record.id
    done = await act(admin, run_id, "resolve", action="retry", feedback="use add")
    assert done.status_code == 303, done.text
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.status == RunStatus.QUEUED, after.record.error


async def test_extend_expiry(admin: httpx.AsyncClient, service: RunService) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    assert view.record.expires_at is not None
    before = await snapshot(service.store, run_id)
    for bad in ("", "abc", "0", "-3", "99999999"):
        response = await act(admin, run_id, "extend", minutes=bad)
        assert response.status_code == 422, bad
        assert 'id="x-error"' in response.text
    assert await snapshot(service.store, run_id) == before
    confirm = await act(admin, run_id, "extend", confirmed=False, minutes="90")
    assert "Extend the expiry?" in confirm.text and "90 minutes" in confirm.text
    done = await act(admin, run_id, "extend", minutes="90")
    assert done.status_code == 303
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.expires_at == view.record.expires_at + timedelta(minutes=90)
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.expiry_extended", ACTOR)
    await service.cancel(run_id, scope=Scope.ALL)
    refused = await act(admin, run_id, "extend", minutes="5")
    assert refused.status_code == 409
    assert "cancelled" in refused.text


async def test_retry_an_expired_run(admin: httpx.AsyncClient, service: RunService) -> None:
    view = await expired_run(service)
    run_id = view.record.id
    html = (await admin.get(f"/admin/runs/{run_id}")).text
    assert 'id="retry"' in html and 'id="extend"' not in html
    confirm = await act(admin, run_id, "retry", confirmed=False)
    assert "Retry this run?" in confirm.text
    done = await act(admin, run_id, "retry")
    assert done.status_code == 303
    after = await service.get_run(run_id, scope=Scope.ALL)
    assert after.record.status == RunStatus.QUEUED
    events = await service.store.events(run_id)
    assert (events[-1].type, events[-1].actor) == ("run.retried", ACTOR)


async def test_retry_a_completed_run_is_refused(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    done = await completed_run(service)
    before = await snapshot(service.store, done.record.id)
    response = await act(admin, done.record.id, "retry")
    assert response.status_code == 409
    assert "it is completed" in response.text
    assert await snapshot(service.store, done.record.id) == before


async def test_unknown_action_and_unknown_run(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    assert (await act(admin, view.record.id, "explode")).status_code == 404
    assert (await act(admin, "run_missing", "cancel")).status_code == 404
