"""The run page links the runs of one conversation, on both back ends: the run it
continues, the runs that continued it (their `run.continued` events), its first run."""

from __future__ import annotations

import re

import httpx
import pytest

from app.dashboard import pages
from app.service.runs import RunService
from app.service.schemas import RunCreate
from tests.dashboard.helpers import completed_run
from tests.helpers import drive_once

ECHO = {"provider": "scripted", "name": "echo"}


def links(html: str, section: str) -> list[str]:
    match = re.search(rf'<dd id="{section}">(.*?)</dd>', html, re.S)
    return re.findall(r'href="/admin/runs/([^"]+)"', match.group(1)) if match else []


async def continue_run(service: RunService, previous: str, prompt: str) -> str:
    body = {"prompt": prompt, "previous_run_id": previous, "model": ECHO, "tools": []}
    view, _ = await service.create_run(RunCreate.model_validate(body))
    await drive_once(service.store, service.settings)
    return view.record.id


async def test_the_run_page_links_the_runs_of_a_conversation(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    first = (await completed_run(service)).record.id
    second = await continue_run(service, first, "second")
    third = await continue_run(service, second, "third")
    other = await continue_run(service, first, "a branch")

    page = await admin.get(f"/admin/runs/{first}")
    assert page.status_code == 200
    html = page.text
    assert links(html, "continued-by") == [second, other]
    assert links(html, "continues") == [] and links(html, "conversation") == []
    assert f"<code>{first}</code>" in html.split('id="conversation"')[1]

    html = (await admin.get(f"/admin/runs/{third}")).text
    assert links(html, "continues") == [second]
    assert links(html, "conversation") == [first]  # its first run
    assert links(html, "continued-by") == []
    assert "(history)" in html and "You said: third" in html

    html = (await admin.get(f"/admin/runs/{second}")).text
    assert links(html, "continues") == [first] and links(html, "continued-by") == [third]
    assert "<code>run.continued</code>" in html  # on the timeline too


async def test_continuations_past_the_timeline_are_linked(
    admin: httpx.AsyncClient, service: RunService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The `run.continued` events of a run with a long timeline are found all the same."""
    monkeypatch.setattr(pages, "TIMELINE_EVENTS", 2)
    first = (await completed_run(service)).record.id
    second = await continue_run(service, first, "second")
    html = (await admin.get(f"/admin/runs/{first}")).text
    assert links(html, "continued-by") == [second]
