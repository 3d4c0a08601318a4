"""Cursors a page did not make (a hand-edited link) are said on the page, never a 500:
a run id with a NUL (PostgreSQL's text holds none), a time outside what PostgreSQL's
timestamps hold once in UTC (year 1 at +14:00, year 9999 at −14:00), both back ends."""

from __future__ import annotations

import base64

import httpx
import pytest

from app.service.runs import RunService
from tests.helpers import suspended_run


def b64(raw: str) -> str:
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


TIMES = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "2026-01-01T00:00:00+00:00"]


@pytest.mark.parametrize("at", TIMES)
async def test_a_foreign_cursor_is_said_on_the_page(
    admin: httpx.AsyncClient, service: RunService, at: str
) -> None:
    await suspended_run(service)
    run_id = "run_x" if not at.startswith("2026") else "run_\x00x"
    for path, cursor in (
        ("/admin", b64(f"{at}|{run_id}")),
        ("/admin/rows", b64(f"{at}|{run_id}")),
        ("/admin/approvals", b64(f"{at}|{run_id}|1|0")),
    ):
        for status in ("any", "requires_action"):
            page = await admin.get(path, params={"cursor": cursor, "status": status})
            assert page.status_code == 200, (path, at, page.text[:300])
            if path != "/admin/rows":
                assert "cursor is malformed" in page.text, (path, at)
