"""`priority` on create, and a queued run's place (`queue`) on a read of it."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.api.test_runs_api import assert_problem, body, create


async def get(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    response = await client.get(f"/v1/runs/{run_id}")
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_queued_run_shows_its_priority_and_position(client: httpx.AsyncClient) -> None:
    first = await create(client)
    second = await create(client)
    urgent = await create(client, priority=50)
    assert (urgent["priority"], first["priority"]) == (50, 0)
    place = (await get(client, urgent["id"]))["queue"]
    assert (place["position"], place["reason"]) == (0, "next")
    place = (await get(client, first["id"]))["queue"]
    assert place["position"] == 1 and place["reason"] == "higher_priority"
    assert place["ahead_higher_priority"] == 1
    place = (await get(client, second["id"]))["queue"]
    assert (place["position"], place["ahead_higher_priority"]) == (2, 1)
    assert place["reason"] == "fair_share"


@pytest.mark.parametrize("priority", [101, -101, "5", 1.5, None, True])
async def test_a_priority_out_of_range_is_a_422(
    client: httpx.AsyncClient, priority: object
) -> None:
    response = await client.post("/v1/runs", json={**body(), "priority": priority})
    doc = assert_problem(response, 422, "validation-error")
    assert "priority" in response.text, doc
