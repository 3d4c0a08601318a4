"""Retries within a bounded budget: safe calls (GET, creates with the Idempotency-Key the
client makes, submissions) across dropped responses, 503 and 429; unsafe calls only when
the request cannot have been processed."""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from agentrun_client import (
    APIConnectionError,
    AsyncClient,
    Client,
    RetryPolicy,
    RunStatus,
    Unavailable,
    WaitTimeout,
)
from tests.client.conftest import KEY, Live, scripted
from tests.e2e.processes import spawn, stop, wait_until
from tests.ports import free_port

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


class Extreme(random.Random):
    """Jitter always at one end: each delay half its ceiling (`low`), or all of it."""

    def __init__(self, low: bool) -> None:
        super().__init__(0)
        self.low = low

    def uniform(self, a: float, b: float) -> float:
        return a if self.low else b


def given_up_after(policy: RetryPolicy, retry_after: float | None = None) -> float:
    """Seconds from the first failure to the last retry's start, when every attempt fails
    at once (a refused connection)."""
    elapsed, attempt = 0.0, 0
    while (delay := policy.delay(attempt, elapsed, retry_after)) is not None:
        assert delay <= max(policy.max_delay, retry_after or 0.0)
        elapsed += delay
        attempt += 1
    return elapsed


@pytest.mark.parametrize("low", [True, False], ids=["least-jitter", "most-jitter"])
@pytest.mark.parametrize("retry_after", [None, 2.0], ids=["refused", "503-retry-after-2"])
def test_the_default_policy_rides_out_ten_seconds_within_its_budget(
    low: bool, retry_after: float | None
) -> None:
    """An API restart takes 4.5-6.5 s here; the default keeps retrying for at least 10 s
    (connection refused, or the API's 503 with `Retry-After: 2`), and no longer than its
    15 s budget."""
    policy = RetryPolicy(rng=Extreme(low))
    assert 10.0 <= given_up_after(policy, retry_after) <= policy.max_elapsed == 15.0
    delays = [RetryPolicy(rng=Extreme(low)).backoff(n) for n in range(8)]
    assert delays == sorted(delays) and delays[0] <= 0.25 and delays[-1] <= 2.0


@pytest.fixture
def restartable(tmp_path: Path) -> Iterator[dict[str, object]]:
    """`agentrun serve` on a port of its own, over a SQLite file that outlives it;
    `restart(after)` stops it and starts another on the same port `after` seconds later."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"sqlite:///{tmp_path}/agentrun.db"
    env = {"AGENTRUN_API_KEYS": KEY, "AGENTRUN_PUBLIC_URL": base}
    procs = [spawn(["serve", "--port", str(port)], url, tmp_path / "serve.log", **env)]

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz").status_code == 200
        except httpx.TransportError:
            assert procs[-1].poll() is None, (tmp_path / "serve.log").read_text()
            return False

    def restart(after: float) -> threading.Thread:
        assert stop(procs[-1]) == 0

        def again() -> None:
            time.sleep(after)
            procs.append(spawn(["serve", "--port", str(port)], url, tmp_path / "serve.log", **env))

        thread = threading.Thread(target=again, daemon=True)
        thread.start()
        return thread

    wait_until(ready, 30, "agentrun serve to be ready")
    try:
        yield {"base": base, "restart": restart}
    finally:
        for proc in procs:
            stop(proc)


def test_the_default_policy_retries_through_an_api_restart(
    restartable: dict[str, object],
) -> None:
    """The API process stops; another starts on its port a second later, and takes its
    own seconds to listen (4.5-6.5 s here, more on a busy machine). A call made meanwhile,
    with the default policy, waits for it."""
    base = str(restartable["base"])
    restart: Callable[[float], threading.Thread] = restartable["restart"]  # type: ignore[assignment]
    with Client(base, KEY) as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=[ADD])
        starter = restart(1.0)
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{base}/readyz")  # (the API is down now)
        started = time.monotonic()
        assert client.runs.get(run.id).id == run.id
        took = time.monotonic() - started
        print(f"the read waited {took:.1f} s for the restarted API")
        starter.join()
        assert took >= 1.0, "it was down for at least a second"
        assert client.runs.cancel(run.id).status == RunStatus.CANCELLED


class GoneAfter(httpx.AsyncBaseTransport):
    """The real app until `gone()`; from then on every connection is refused until
    `back()`. Records each long poll's `timeout` and how long was left then."""

    def __init__(self, app: FastAPI) -> None:
        self.inner = httpx.ASGITransport(app=app)
        self.down = False
        self.deadline: float | None = None
        self.polls: list[tuple[float, float]] = []  # (timeout asked, seconds left)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.down:
            raise httpx.ConnectError("refused", request=request)
        if request.url.path.endswith("/wait") and self.deadline is not None:
            asked = float(request.url.params["timeout"])
            self.polls.append((asked, self.deadline - time.monotonic()))
        return await self.inner.handle_async_request(request)


PATIENT = RetryPolicy(max_retries=1000, max_elapsed=30.0, base_delay=0.05, max_delay=0.1)


async def test_wait_raises_wait_timeout_at_its_deadline_while_the_api_is_away(
    asgi_app: FastAPI,
) -> None:
    """The retry budget (30 s here) does not stretch a wait's `timeout`: at the deadline
    `wait` raises `WaitTimeout`, as documented, even while the retries go on (it waited
    out the whole budget, then raised `APIConnectionError`)."""
    transport = GoneAfter(asgi_app)
    async with AsyncClient("http://test", KEY, transport=transport, retry=PATIENT) as client:
        run = await client.runs.create(prompt="x", model=scripted(), tools=[ADD])
        await client.runs.wait(run.id, "requires_action", timeout=10)
        transport.down = True
        started = time.monotonic()
        with pytest.raises(WaitTimeout) as timed_out:
            await client.runs.wait(run.id, "completed", timeout=0.5)
        took = time.monotonic() - started
        transport.down = False
        await client.runs.cancel(run.id)
    assert 0.5 <= took < 2.0, took
    assert timed_out.value.run is None  # not read within the wait


async def test_a_long_poll_retried_after_an_outage_asks_only_for_the_time_left(
    asgi_app: FastAPI,
) -> None:
    """The long poll sent again once the API is back holds only what is left of the
    wait's `timeout` (it asked for the whole of it again, and the wait overran). Margins
    for a loaded machine: the old fault asked >= 1.5 s too much and overran by 1.5 s."""
    transport = GoneAfter(asgi_app)
    async with AsyncClient("http://test", KEY, transport=transport, retry=PATIENT) as client:
        run = await client.runs.create(prompt="x", model=scripted(), tools=[ADD])
        await client.runs.wait(run.id, "requires_action", timeout=10)
        transport.down = True
        started = time.monotonic()
        transport.deadline = started + 3.0

        async def back() -> None:
            await asyncio.sleep(1.5)
            transport.down = False

        task = asyncio.ensure_future(back())
        with pytest.raises(WaitTimeout) as timed_out:
            await client.runs.wait(run.id, "completed", timeout=3.0)
        took = time.monotonic() - started
        await task
        await client.runs.cancel(run.id)
    assert timed_out.value.run is not None and timed_out.value.run.status == "requires_action"
    assert transport.polls, "a long poll was sent once the API was back"
    for asked, left in transport.polls:
        assert asked <= left + 0.5, (asked, left)
    assert took < 3.0 + 1.0, took


def test_the_sync_wait_keeps_its_deadline_too(live_sqlite: Live) -> None:
    """`Client` (generated from `AsyncClient`): the same, against a real port that stops
    answering (a transport of its own refuses every connection once the run is suspended)."""

    class Refusing(httpx.HTTPTransport):
        down = False

        def handle_request(self, request: httpx.Request) -> httpx.Response:
            if self.down:
                raise httpx.ConnectError("refused", request=request)
            return super().handle_request(request)

    transport = Refusing()
    with live_sqlite.client(transport=transport, retry=PATIENT) as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=[ADD])
        client.runs.wait(run.id, "requires_action", timeout=10)
        transport.down = True
        started = time.monotonic()
        with pytest.raises(WaitTimeout):
            client.runs.wait(run.id, "completed", timeout=0.5)
        took = time.monotonic() - started
        transport.down = False
        client.runs.cancel(run.id)
    assert 0.5 <= took < 2.0, took
