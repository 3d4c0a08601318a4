"""`runs.browser_token`: a backend mints a token with the client; a client holding only
that token reads the run's events and messages and is refused everything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi import FastAPI

from agentrun_client import (
    AsyncClient,
    BrowserToken,
    Forbidden,
    InvalidInput,
    NotFound,
    RetryPolicy,
    Unauthorized,
)
from tests.client.conftest import scripted


async def test_a_minted_token_reads_one_run_and_nothing_else(
    asgi: AsyncClient, asgi_app: FastAPI
) -> None:
    run = await asgi.runs.create(prompt="hi", model=scripted())
    other = await asgi.runs.create(prompt="hello", model=scripted())
    minted = await asgi.runs.browser_token(run.id, ttl=timedelta(minutes=5))
    assert isinstance(minted, BrowserToken) and minted.run_id == run.id
    left = (minted.expires_at - datetime.now(UTC)).total_seconds()
    assert 295 <= left <= 301
    transport = httpx.ASGITransport(app=asgi_app)
    no_retry = RetryPolicy(max_retries=0)
    async with AsyncClient(
        "http://test", minted.token, transport=transport, retry=no_retry
    ) as browser:
        events = await browser.runs.list_events(run.id)
        assert events[0].type == "run.created"
        page = await browser.runs.messages_page(run.id)
        assert page.data[0].message.content == [{"type": "text", "text": "hi"}]
        with pytest.raises(NotFound):
            await browser.runs.list_events(other.id)
        with pytest.raises(Forbidden):
            await browser.runs.get(run.id)
        with pytest.raises(Forbidden):
            await browser.runs.cancel(run.id)
        with pytest.raises(Forbidden):
            await browser.runs.browser_token(run.id)
    async with AsyncClient(
        "http://test", minted.token[:-2] + "xx", transport=transport, retry=no_retry
    ) as altered:
        with pytest.raises(Unauthorized) as refused:
            await altered.runs.list_events(run.id)
    assert "browser-token-invalid" in str(refused.value.type)


@pytest.mark.parametrize("ttl", [0, 0.4, 24 * 3600 + 1, timedelta(days=2)])
async def test_a_ttl_out_of_range_is_refused_by_the_client(
    asgi: AsyncClient, ttl: float | timedelta
) -> None:
    with pytest.raises(InvalidInput):
        await asgi.runs.browser_token("run_x", ttl=ttl)
