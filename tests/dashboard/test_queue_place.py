"""The run page shows a queued run's priority and place in the queue; the list, its
priority."""

from __future__ import annotations

import re

import httpx

from app.service.runs import RunService
from app.service.schemas import RunCreate

ECHO = {"provider": "scripted", "name": "echo"}


async def queued(service: RunService, priority: int = 0) -> str:
    body = {"prompt": "hi", "model": ECHO, "priority": priority}
    view, _ = await service.create_run(RunCreate.model_validate(body))
    return view.record.id


def field(html: str, name: str) -> str:
    match = re.search(rf'<dd id="{name}">(.*?)</dd>', html, re.S)
    assert match, name
    return match.group(1)


async def test_a_queued_run_shows_its_priority_and_place(
    admin: httpx.AsyncClient, service: RunService
) -> None:
    plain = await queued(service)
    urgent = await queued(service, priority=9)
    html = (await admin.get(f"/admin/runs/{plain}")).text
    assert field(html, "priority") == "0"
    place = field(html, "queue-place")
    assert "1 due run before it (1 of higher priority)" in place
    assert "runs of higher priority go first" in place
    html = (await admin.get(f"/admin/runs/{urgent}")).text
    assert field(html, "queue-place") == "next to be claimed"
    rows = (await admin.get("/admin?status=queued")).text
    assert "priority 9" in rows
