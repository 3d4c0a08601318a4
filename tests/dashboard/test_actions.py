"""Each action's form parsed through the public HTTP interface (form posts with the
session's CSRF token, confirmed): hostile input (missing fields, wrong types, files,
huge or non-finite numbers, unknown actions) gets a clear 4xx page and changes nothing."""

from __future__ import annotations

import html
from typing import Any

import httpx
import pytest

from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service.runs import RunService
from tests.dashboard.helpers import completed_run, parked_run
from tests.helpers import snapshot, suspended_run

Files = dict[str, tuple[str, bytes, str]]


async def post(
    client: httpx.AsyncClient,
    run_id: str,
    verb: str,
    data: dict[str, Any],
    files: Files | None = None,
) -> httpx.Response:
    """A confirmed POST of action `verb` with exactly `data` (and `files`, multipart)."""
    token: str = client.csrf  # type: ignore[attr-defined]
    form = {"csrf_token": token, "confirmed": "yes", **data}
    return await client.post(f"/admin/runs/{run_id}/{verb}", data=form, files=files)


def page_text(response: httpx.Response) -> str:
    return html.unescape(response.text)


@pytest.mark.parametrize(
    "verb", ["explode", "CANCEL", "tool_results", "cancel ", "extend.", "x" * 300]
)
async def test_unknown_actions_are_404_and_change_nothing(
    admin: httpx.AsyncClient, service: RunService, verb: str
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    response = await post(admin, view.record.id, verb, {"minutes": "60"})
    assert response.status_code == 404
    assert "unknown action" in response.text
    assert await snapshot(service.store, view.record.id) == before


@pytest.mark.parametrize(
    ("minutes", "message"),
    [
        ("1e400", "between 1 and 525600"),  # overflows to infinity
        ("9" * 400, "between 1 and 525600"),
        ("1e308", "between 1 and 525600"),  # finite, but infinite once in seconds
        ("525601", "between 1 and 525600"),
        ("-0", "between 1 and 525600"),
        # The page asks for 1 to 525600 minutes (min="1"); 1e-300 extended by ~0 s and
        # wrote a meaningless run.expiry_extended event.
        ("0.5", "between 1 and 525600"),
        ("1e-300", "between 1 and 525600"),
        ("inf", "a number of minutes"),
        ("Infinity", "a number of minutes"),
        ("nan", "a number of minutes"),
        ("0x10", "a number of minutes"),
        ("6_0", "a number of minutes"),
        ("\uff16\uff10", "a number of minutes"),  # full-width digits
        ("1.5.2", "a number of minutes"),
        ("60 minutes", "a number of minutes"),
    ],
)
async def test_extend_refuses_numbers_out_of_range_or_not_numbers(
    admin: httpx.AsyncClient, service: RunService, minutes: str, message: str
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    response = await post(admin, view.record.id, "extend", {"minutes": minutes})
    assert response.status_code == 422, minutes
    assert 'id="x-error"' in response.text and message in response.text
    assert await snapshot(service.store, view.record.id) == before


async def test_extend_refuses_a_missing_field_and_a_file(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    missing = await post(admin, view.record.id, "extend", {})
    assert missing.status_code == 422 and "a number of minutes" in missing.text
    upload = await post(
        admin, view.record.id, "extend", {}, files={"minutes": ("m.txt", b"60", "text/plain")}
    )
    assert upload.status_code == 422
    assert "minutes: expected text, not a file" in upload.text
    assert await snapshot(service.store, view.record.id) == before


async def test_extend_accepts_decimal_and_exponent_forms(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    response = await post(admin, view.record.id, "extend", {"minutes": "1.5e1"})
    assert response.status_code == 303
    events = await service.store.events(view.record.id)
    assert (events[-1].type, events[-1].data["seconds"]) == ("run.expiry_extended", 900.0)


async def test_form_errors_on_a_run_without_that_form_are_listed_at_the_top(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    """A completed run's page has no extend form to show the error beside."""
    done = await completed_run(service)
    before = await snapshot(service.store, done.record.id)
    response = await post(admin, done.record.id, "extend", {"minutes": "abc"})
    assert response.status_code == 422
    assert 'id="x-error"' not in response.text
    assert "Nothing was changed: minutes: enter a number of minutes" in response.text
    assert await snapshot(service.store, done.record.id) == before


def boxes(view: Any, **extra: str) -> dict[str, str]:
    """The results form of `view` as the page renders it (both boxes empty)."""
    fields = {"count": str(len(view.pending))}
    for i, call in enumerate(view.pending):
        fields[f"call_id_{i}"] = call.call_id
    return {**fields, **extra}


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"count": ""}, None, "count must be a whole number from 0 to 1000"),
        ({"count": "two"}, None, "count must be a whole number"),
        ({"count": "-1"}, None, "count must be a whole number"),
        ({"count": "1001"}, None, "count must be a whole number"),
        ({"count": "9" * 5000}, None, "count must be a whole number"),
        ({"call_id_0": ""}, "output_0", "not pending any more"),
        ({"call_id_0": "call_of_another_run"}, "output_0", "not pending any more"),
        ({"is_error_0": "true"}, "output_0", "expected the checkbox's value `on`"),
        ({"output_0": "[" * 100_000}, "output_0", "nested deeper than"),
        ({"output_0": "[" * 200 + "]" * 200}, "output_0", "0.0.0.0.0.0.… is nested deeper"),
        ({"output_0": "NaN"}, "output_0", "the result is not a finite number"),
        ({"output_0": "1e400"}, "output_0", "the result is not a finite number"),
        ({"output_0": str(2**70)}, "output_0", "outside the 64-bit range"),
        # Past Python's 4300-digit limit json.loads raises a plain ValueError (was a 500).
        ({"output_0": "9" * 5000}, "output_0", "the result is an integer outside the 64-bit"),
        ({"output_0": '{"a": [' + "9" * 5000 + "]}"}, "output_0", "outside the 64-bit range"),
        ({"output_0": '{"a": [1, "\\u0000"]}'}, "output_0", "a.1 contains a NUL character"),
        ({"output_0": '"\\ud800"'}, "output_0", "lone surrogate"),
        ({"output_0": "", "output_1": ""}, None, "at least one tool call"),
    ],
)
async def test_tool_results_refuse_hostile_forms(
    admin: httpx.AsyncClient,
    service: RunService,
    change: dict[str, str],
    field: str | None,
    message: str,
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    data = boxes(view, output_0="3", output_1="7")
    data.update(change)
    response = await post(admin, view.record.id, "tool-results", data)
    assert response.status_code == 422, response.text
    text = page_text(response)
    assert message in text
    if field is not None:
        assert f'id="{field}_error"' in text
    assert await snapshot(service.store, view.record.id) == before


async def test_tool_results_refuse_a_file_and_boxes_the_page_lacks(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    before = await snapshot(service.store, view.record.id)
    upload = await post(
        admin,
        view.record.id,
        "tool-results",
        boxes(view),
        files={"output_0": ("out.json", b"3", "application/json")},
    )
    assert upload.status_code == 422
    assert "output_0: expected text, not a file" in upload.text
    # A box past the ones the page shows: its error is listed at the top.
    far = await post(
        admin, view.record.id, "tool-results", {"count": "5", "call_id_4": "x", "output_4": "1"}
    )
    assert far.status_code == 422
    assert "Nothing was changed: output_4: this tool call is not pending any more" in far.text
    assert await snapshot(service.store, view.record.id) == before


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, "action"),
        ({"action": "explode"}, "Input should be"),
        ({"action": "retry", "feedback": "a\x00b"}, "feedback contains a NUL character"),
        ({"action": "stop", "reason": "\x00"}, "reason contains a NUL character"),
        ({"action": "repair", "tool_name": "  "}, "repair needs the name"),
    ],
)
async def test_resolve_refuses_hostile_forms(
    admin: httpx.AsyncClient, service: RunService, data: dict[str, str], message: str
) -> None:
    view = await parked_run(service)
    before = await snapshot(service.store, view.record.id)
    response = await post(admin, view.record.id, "resolve", data)
    assert response.status_code == 422
    assert message in page_text(response)
    assert "Please correct the form below." in response.text
    assert await snapshot(service.store, view.record.id) == before


async def test_resolve_refuses_a_file(admin: httpx.AsyncClient, service: RunService) -> None:
    view = await parked_run(service)
    before = await snapshot(service.store, view.record.id)
    response = await post(
        admin, view.record.id, "resolve", {}, files={"action": ("a", b"fail", "text/plain")}
    )
    assert response.status_code == 422
    assert "action: expected text, not a file" in response.text
    assert await snapshot(service.store, view.record.id) == before


async def test_cancel_and_retry_ignore_extra_fields(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    """They take no fields: whatever else a form carries is not read."""
    view = await suspended_run(service)
    response = await post(admin, view.record.id, "cancel", {"minutes": "x", "count": "y"})
    assert response.status_code == 303
    assert (
        await service.get_run(view.record.id, scope=Scope.ALL)
    ).record.status == RunStatus.CANCELLED


async def test_a_form_over_the_body_limit_is_an_html_413_page(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    view = await suspended_run(service)
    run_id = view.record.id
    before = await snapshot(service.store, run_id)
    limit = service.settings.max_body_bytes
    sized = await post(admin, run_id, "tool-results", {"count": "1", "output_0": "x" * limit})

    async def chunks() -> Any:  # no Content-Length: refused while streaming
        for _ in range(limit // 1000 + 1):
            yield b"x" * 1000

    streamed = await admin.post(
        f"/admin/runs/{run_id}/tool-results",
        content=chunks(),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    for response in (sized, streamed):
        assert response.status_code == 413
        assert response.headers["content-type"].startswith("text/html")
        assert f"larger than the {limit} bytes" in page_text(response)
        assert 'href="/admin"' in response.text  # the dashboard's page, with its navigation
    assert await snapshot(service.store, run_id) == before
    api = await admin.post("/v1/runs", content=b"x" * (limit + 1))
    assert api.status_code == 413 and api.json()["type"] == "/problems/payload-too-large"
