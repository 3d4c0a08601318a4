"""A budget-suspended run on the dashboard: the page says why, and its "raise limit" form
(CSRF, confirmation, `runs:operate`) resumes it; bad input is a 422 beside the field."""

from __future__ import annotations

import html

import httpx

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from tests.dashboard.test_actions import post
from tests.helpers import drive_once, results_for, run_body, snapshot


async def budget_suspended(service: RunService) -> str:
    view, _ = await service.create_run(run_body(limits={"max_model_calls": 1}))
    await drive_once(service.store, service.settings)
    suspended = await service.get_run(view.record.id, scope=Scope.ALL)
    await service.submit_tool_results(
        results_for(suspended), run_id=view.record.id, scope=Scope.ALL
    )
    await drive_once(service.store, service.settings)
    record = (await service.get_run(view.record.id, scope=Scope.ALL)).record
    assert record.waiting is not None and record.waiting.doc()["type"] == "budget"
    return view.record.id


async def test_the_page_says_why_and_raising_the_limit_resumes_the_run(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    run_id = await budget_suspended(service)
    page = await admin.get(f"/admin/runs/{run_id}")
    text = html.unescape(page.text)
    assert page.status_code == 200
    assert 'id="budget-reason"' in text and "limit <code>max_model_calls</code>" in text
    assert "1 spent of 1 allowed" in text and 'id="limits-form"' in text
    assert "budget: run limit max_model_calls" in text  # (the waiting reason)

    token: str = admin.csrf  # type: ignore[attr-defined]
    review = await admin.post(
        f"/admin/runs/{run_id}/limits", data={"csrf_token": token, "max_model_calls": "2"}
    )
    assert review.status_code == 200 and "max model calls" in review.text  # (confirm page)
    assert "Change this run&#39;s limits?" in review.text
    assert "Yes, change the limits" in review.text
    assert (
        await service.get_run(run_id, scope=Scope.ALL)
    ).record.status is RunStatus.REQUIRES_ACTION
    done = await post(admin, run_id, "limits", {"max_model_calls": "2", "max_cost_usd": ""})
    assert done.status_code == 303, done.text
    record = (await service.get_run(run_id, scope=Scope.ALL)).record
    assert record.status is RunStatus.QUEUED and record.limits == {"max_model_calls": 2}
    events = await service.store.events(run_id)
    raised = [e for e in events if e.type == "run.limits_raised"]
    assert raised and raised[0].actor is not None and raised[0].actor.startswith("key:")


async def test_bad_limits_are_refused_beside_their_field_and_change_nothing(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    run_id = await budget_suspended(service)
    before = await snapshot(service.store, run_id)
    for data, field in (
        ({"max_model_calls": "lots"}, "max_model_calls"),
        ({"max_total_tokens": "1.5"}, "max_total_tokens"),
        ({"max_cost_usd": "1e400"}, "max_cost_usd"),
        ({"max_duration_seconds": "-1"}, "max_duration_seconds"),
        ({"max_cost_usd": "1"}, None),  # (the scripted model has no price: the service's 422)
        ({}, None),
    ):
        response = await post(admin, run_id, "limits", data)
        assert response.status_code == 422, (data, response.status_code)
        if field is not None:
            assert f'id="l-{field}-error"' in response.text, data
    assert await snapshot(service.store, run_id) == before
    upload = await post(
        admin, run_id, "limits", {}, files={"max_cost_usd": ("x.txt", b"1", "text/plain")}
    )
    assert upload.status_code == 422 and "expected text, not a file" in upload.text
