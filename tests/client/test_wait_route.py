"""`wait` over the API's long poll (`GET /v1/runs/{id}/wait`), and over the event stream
when the server has no such route (an older server)."""

from __future__ import annotations

import httpx
import pytest

from agentrun_client import RetryPolicy, RunStatus, WaitTimeout
from tests.client.conftest import Live, scripted

ADD = [{"name": "add", "parameters": {"type": "object"}}]


class Recording(httpx.HTTPTransport):
    """The real server, with every request recorded; `older` answers `/wait` as a server
    without the route does."""

    def __init__(self, older: bool = False) -> None:
        super().__init__()
        self.older = older
        self.requests: list[httpx.Request] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if self.older and request.url.path.endswith("/wait"):
            problem = {"type": "/problems/not-found", "title": "Not found", "status": 404}
            return httpx.Response(404, json=problem, request=request)
        return super().handle_request(request)

    def waits(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.url.path.endswith("/wait")]

    def streams(self) -> list[httpx.Request]:
        return [r for r in self.requests if r.headers.get("accept") == "text/event-stream"]


def test_wait_is_a_long_poll_and_opens_no_stream(live: Live) -> None:
    transport = Recording()
    with live.client(transport=transport) as client:
        run = client.runs.create(prompt="x", model=scripted(delay_ms=200), tools=ADD)
        suspended = client.runs.wait(run.id, timeout=30)
        assert suspended.status == RunStatus.REQUIRES_ACTION
        client.runs.cancel(run.id)
        # Waiting for what the run can no longer reach answers with the run as it ended.
        assert client.runs.wait(run.id, "running").status == RunStatus.CANCELLED
    waits = transport.waits()
    assert waits and not transport.streams()
    asked = waits[0].url.params
    # The ended statuses are always asked for: a wait returns on an ended run.
    assert set(asked.get_list("status")) == {
        "requires_action", "completed", "failed", "cancelled", "expired"
    }  # fmt: skip
    assert 29 < float(asked["timeout"]) <= 30


def test_an_older_server_is_waited_on_over_its_event_stream(live: Live) -> None:
    transport = Recording(older=True)
    with live.client(transport=transport) as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=ADD)
        assert client.runs.wait(run.id, timeout=30).status == RunStatus.REQUIRES_ACTION
        with pytest.raises(WaitTimeout):
            client.runs.wait(run.id, "completed", timeout=0.2)
        client.runs.cancel(run.id)
    assert len(transport.waits()) == 1, "the route is asked for once per client"
    assert transport.streams()


async def test_async_wait_falls_back_too(live: Live) -> None:
    class AsyncOlder(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.url.path.endswith("/wait"):
                return httpx.Response(405, json={"status": 405}, request=request)
            return await super().handle_async_request(request)

    async with live.async_client(transport=AsyncOlder()) as client:
        run = await client.runs.create(prompt="x", model=scripted(), tools=ADD)
        assert (await client.runs.wait(run.id, timeout=30)).status == RunStatus.REQUIRES_ACTION
        await client.runs.cancel(run.id)


class DropsFirstHold(Recording):
    """The first wait is held by the server for half a second, then its connection drops."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/wait") and not self.waits():
            self.requests.append(request)
            short = request.url.copy_set_param("timeout", "0.5")
            response = httpx.HTTPTransport.handle_request(
                self,
                httpx.Request("GET", short, headers=request.headers, extensions=request.extensions),
            )
            response.read()
            raise httpx.RemoteProtocolError("connection dropped")
        return super().handle_request(request)


def test_a_dropped_long_poll_is_retried_whatever_it_held(live: Live) -> None:
    """The retry budget (0.2 s here) counts from the failure, not from the start of a
    request the server was asked to hold. (The wait's deadline leaves the retry 2 s after
    the dropped 0.5-s hold: with 1 s, a hold answered late on a loaded machine left it
    none, and the wait timed out with the run unread.)"""
    transport = DropsFirstHold()
    retry = RetryPolicy(max_elapsed=0.2, base_delay=0.01)
    with live.client() as plain, live.client(transport=transport, retry=retry) as client:
        run = plain.runs.create(prompt="x", model=scripted(), tools=ADD)
        plain.runs.wait(run.id, timeout=30)
        with pytest.raises(WaitTimeout) as timed_out:  # (the 0.5-s hold has 2 s of margin)
            client.runs.wait(run.id, "completed", timeout=2.5)
        plain.runs.cancel(run.id)
    assert timed_out.value.run is not None
    assert timed_out.value.run.status == RunStatus.REQUIRES_ACTION
    assert len(transport.waits()) == 2


@pytest.mark.parametrize("older", [False, True], ids=["long-poll", "event-stream"])
def test_a_waiter_takes_status_names_as_the_docs_show(live: Live, older: bool) -> None:
    """docs/client.md: `w.until({...})` with names, as `runs.wait` takes them."""
    with live.client(transport=Recording(older=older)) as client:
        run = client.runs.create(prompt="x", model=scripted(), tools=ADD)
        with client.runs.waiter(run.id, timeout=30) as waiter:
            suspended = waiter.until({"requires_action"})
            assert suspended.status == RunStatus.REQUIRES_ACTION
            client.runs.cancel(run.id)
            assert waiter.until("cancelled").status == RunStatus.CANCELLED
            with pytest.raises(ValueError, match="'paused' is not a valid RunStatus"):
                waiter.until(["paused"])


async def test_an_async_waiter_takes_status_names(live: Live) -> None:
    async with live.async_client() as client:
        run = await client.runs.create(prompt="x", model=scripted(), tools=ADD)
        async with client.runs.waiter(run.id, timeout=30) as waiter:
            suspended = await waiter.until({"requires_action", RunStatus.COMPLETED})
        assert suspended.status == RunStatus.REQUIRES_ACTION
        await client.runs.cancel(run.id)
