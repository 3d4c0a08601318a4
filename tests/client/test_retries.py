"""Retries within a bounded budget: safe calls (GET, creates with the Idempotency-Key the
client makes, submissions) across dropped responses, 503 and 429; unsafe calls only when
the request cannot have been processed."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
import pytest
from fastapi import FastAPI

from agentrun_client import APIConnectionError, AsyncClient, RetryPolicy, Unavailable
from tests.client.conftest import KEY, scripted

ADD = {"name": "add", "parameters": {"type": "object"}}
FAST = RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.002)


class Faulty(httpx.AsyncBaseTransport):
    """The real app behind a transport whose first answers are faults: each fault is
    `"connect"` (never sent), `"drop"` (processed, the response lost) or a status code."""

    def __init__(self, app: FastAPI, faults: list[str | int], retry_after: str = "0") -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.faults = list(faults)
        self.retry_after = retry_after
        self.requests: list[httpx.Request] = []
        self.dropped: list[httpx.Response] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        fault = self.faults.pop(0) if self.faults else None
        if fault == "connect":
            raise httpx.ConnectError("refused", request=request)
        if isinstance(fault, int):
            problem = {"type": "/problems/service-unavailable", "title": "x", "status": fault}
            headers = {"Retry-After": self.retry_after}
            return httpx.Response(fault, json=problem, headers=headers, request=request)
        response = await self.inner.handle_async_request(request)
        if fault == "drop":
            await response.aread()
            self.dropped.append(response)
            raise httpx.ReadError("connection reset", request=request)
        return response


def client_with(transport: Faulty, retry: RetryPolicy = FAST) -> AsyncClient:
    return AsyncClient("http://test", KEY, transport=transport, retry=retry)


async def test_a_create_whose_response_was_lost_is_replayed_not_repeated(
    asgi_app: FastAPI,
) -> None:
    transport = Faulty(asgi_app, ["drop", "drop"])
    async with client_with(transport) as client:
        run = await client.runs.create(prompt="once", model=scripted(), tools=[ADD])
        await client.runs.cancel(run.id)
    keys = {r.headers["idempotency-key"] for r in transport.requests[:3]}
    assert len(transport.requests) == 4 and len(keys) == 1, "one key across the attempts"
    made = [r.json()["id"] for r in transport.dropped]
    assert made == [run.id, run.id], "the server made one run; the retries replayed it"


async def test_503_and_connection_errors_are_retried_honouring_retry_after(
    asgi_app: FastAPI,
) -> None:
    transport = Faulty(asgi_app, ["connect", 503], retry_after="0.2")
    async with client_with(transport) as client:
        started = time.monotonic()
        page = await client.runs.list_page(limit=1)
        elapsed = time.monotonic() - started
    assert page.data is not None and len(transport.requests) == 3
    assert elapsed >= 0.2, "Retry-After was honoured"


@pytest.mark.parametrize(
    ("policy", "retry_after", "attempts"),
    [
        (FAST, "0", 4),  # max_retries=3: four attempts, then the problem
        (RetryPolicy(max_retries=3, max_elapsed=5), "30", 1),  # the wait exceeds the budget
    ],
)
async def test_the_budget_is_bounded(
    asgi_app: FastAPI, policy: RetryPolicy, retry_after: str, attempts: int
) -> None:
    transport = Faulty(asgi_app, [503] * 10, retry_after=retry_after)
    async with client_with(transport, policy) as client:
        with pytest.raises(Unavailable) as unavailable:
            await client.runs.get("run_x")
    assert len(transport.requests) == attempts
    assert unavailable.value.retry_after == float(retry_after)


@pytest.mark.parametrize(
    ("faults", "outcome"),
    [
        (["connect"], None),  # never sent: retried, then it succeeds
        ([503], Unavailable),  # may have been processed: not retried
        (["drop"], APIConnectionError),
    ],
)
async def test_unsafe_calls_are_retried_only_when_never_processed(
    asgi_app: FastAPI, faults: list[str | int], outcome: Callable[..., Exception] | None
) -> None:
    async with client_with(Faulty(asgi_app, [])) as setup:
        run = await setup.runs.create(prompt="x", model=scripted(), tools=[ADD])
    transport = Faulty(asgi_app, faults)
    async with client_with(transport) as client:
        if outcome is None:
            assert (await client.runs.cancel(run.id)).status == "cancelled"
            assert len(transport.requests) == 2
        else:
            with pytest.raises(outcome):  # type: ignore[call-overload]
                await client.runs.cancel(run.id)
            assert len(transport.requests) == 1
