"""A queue's in-flight limit over HTTP (`AGENTRUN_QUEUE_LIMITS`): a lease asking for more
than the limit leaves gets what the limit leaves, on both back ends."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from app.settings import Settings
from app.store.runs import RunStore
from tests.api.conftest import KEY
from tests.api.test_runs_api import suspend
from tests.conftest import make_settings
from tests.helpers import api_client
from tests.toolqueue.test_routes import lease


@pytest.fixture
async def limited(database_url: str, store: RunStore) -> AsyncIterator[httpx.AsyncClient]:
    settings: Settings = make_settings(
        database_url, api_keys=KEY, queue_limits={"q": {"max_in_flight": 3}}
    )
    async with api_client(settings, KEY) as c:
        yield c


async def test_a_limited_queue_hands_out_no_more_than_its_limit(
    limited: httpx.AsyncClient, store: RunStore
) -> None:
    for _ in range(2):
        await suspend(limited, store, tool_queue="q")  # two calls each
    first = await lease(limited, limit=10)
    assert len(first) == 3
    assert await lease(limited, limit=10) == []  # (wait 0: answered at once, empty)
    done = await limited.post(
        f"/v1/queues/q/leases/{first[0]['lease_token']}/result", json={"output": "3"}
    )
    assert done.status_code == 200, done.text
    assert len(await lease(limited, limit=10)) == 1
