"""`AsyncRuns` (`/v1/runs`) and `AsyncRunWaiter`; `_sync_runs.py` (`Runs`, `RunWaiter`) is
generated from this file with `_sync.py` (`make sync-client`): edit this one, then
regenerate."""

from __future__ import annotations

import builtins
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Collection,
    Iterable,
    Mapping,
)
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol, Unpack

import httpx

from agentrun_client import _base, _forks
from agentrun_client._async_approvals import AsyncRequester
from agentrun_client._async_shims import sleep
from agentrun_client._base import Call, DeadlineReached, RetryPolicy, RunOptions, Tools
from agentrun_client._forks import Appended, ForkMode, OnDivergence
from agentrun_client.errors import (
    APIConnectionError,
    APIError,
    InvalidInput,
    WaitTimeout,
    error_for,
    retry_after_of,
)
from agentrun_client.models import (
    TERMINAL_EVENTS,
    BrowserToken,
    Checkpoint,
    CheckpointList,
    ConversationMessage,
    Event,
    EventList,
    MessagePage,
    Run,
    RunPage,
    RunStatus,
    SubmitOutcome,
    ToolResult,
)


class AsyncRunsClient(AsyncRequester, Protocol):
    """The client, as far as the runs use it: its requests, retry policy, timeouts and
    the httpx client its event streams are read on."""

    retry: RetryPolicy
    timeout: httpx.Timeout
    http: httpx.AsyncClient


Statuses = Collection[RunStatus | str] | RunStatus | str | None


class AsyncRuns:
    """`/v1/runs`: create, get, list, children, cancel, submit_tool_outputs, resolve, events,
    wait, checkpoints, fork, forks."""

    def __init__(self, client: AsyncRunsClient) -> None:
        self._client = client
        self._wait_route = True  # until the server shows it has no `/wait` (RunWaiter)

    async def _json(self, call: Call) -> Any:
        response = await self._client.request(call)
        return response.json()

    async def create(
        self,
        *,
        prompt: str,
        model: Mapping[str, Any] | None = None,
        tools: Tools | None = None,
        idempotency_key: str | None = None,
        **options: Unpack[RunOptions],
    ) -> Run:
        """Create a run; retried safely (with `idempotency_key`, or one made here).
        `previous_run_id=` continues a completed run (then `model` may be left out);
        `agent="name"` (or `"name@2"`) starts it from a named agent (then leave out `model`
        and `tools`: the agent's are the run's)."""
        call = _base.create_call(prompt, model, tools, idempotency_key, options)
        return Run.model_validate(await self._json(call))

    async def get(self, run_id: str) -> Run:
        return Run.model_validate(await self._json(Call("GET", _base.run_path(run_id), safe=True)))

    async def list_page(
        self,
        *,
        status: RunStatus | str | None = None,
        limit: int = 20,
        cursor: str | None = None,
        root_run_id: str | None = None,
    ) -> RunPage:
        """One page, newest first; `next_cursor` fetches the next. `root_run_id`: only the
        runs of that tree (the root and every descendant)."""
        params: dict[str, Any] = _base.page_params(limit, cursor)
        if status is not None:
            params["status"] = str(_base.status_of(status))
        if root_run_id is not None:
            _base.run_path(root_run_id)  # (`InvalidInput` for what is no run id)
            params["root_run_id"] = root_run_id
        return RunPage.model_validate(await self._json(Call("GET", "/v1/runs", params, safe=True)))

    async def list(
        self,
        *,
        status: RunStatus | str | None = None,
        page_size: int = 100,
        root_run_id: str | None = None,
    ) -> AsyncIterator[Run]:
        """Every run (of `status`; of the tree `root_run_id`), newest first, fetching pages
        as the iteration goes."""
        cursor: str | None = None
        while True:
            page = await self.list_page(
                status=status, limit=page_size, cursor=cursor, root_run_id=root_run_id
            )
            for run in page.data:
                yield run
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def children_page(
        self, run_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> RunPage:
        """One page of the run's child runs (its agent tools' calls started them), oldest
        first."""
        path = _base.run_path(run_id, "/children")
        call = Call("GET", path, _base.page_params(limit, cursor), safe=True)
        return RunPage.model_validate(await self._json(call))

    async def children(self, run_id: str, *, page_size: int = 100) -> AsyncIterator[Run]:
        """Every child run of the run, oldest first, fetching pages as the iteration goes
        (their own children: `list(root_run_id=…)`, or `children` of each)."""
        cursor: str | None = None
        while True:
            page = await self.children_page(run_id, limit=page_size, cursor=cursor)
            for run in page.data:
                yield run
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def messages_page(
        self, run_id: str, *, limit: int = 50, cursor: str | None = None
    ) -> MessagePage:
        """One page of the run's conversation, oldest first; `next_cursor` fetches the next."""
        path = _base.run_path(run_id, "/messages")
        call = Call("GET", path, _base.page_params(limit, cursor), safe=True)
        return MessagePage.model_validate(await self._json(call))

    async def messages(
        self, run_id: str, *, page_size: int = 100
    ) -> AsyncIterator[ConversationMessage]:
        """The run's whole conversation, oldest first (`message` of each can be sent back
        as `history`), fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = await self.messages_page(run_id, limit=page_size, cursor=cursor)
            for message in page.data:
                yield message
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def checkpoints(self, run_id: str) -> builtins.list[Checkpoint]:
        """Where the run can be forked, oldest first (read off its log: nothing is
        written); `fork(run_id, at=c.seq)` starts from the first `c.seq` messages."""
        call = _forks.checkpoints_call(run_id)
        return CheckpointList.model_validate(await self._json(call)).data

    async def fork(
        self,
        run_id: str,
        *,
        at: int | None = None,
        tool_results: Iterable[ToolResult | Mapping[str, Any]] | None = None,
        append: Iterable[Appended] | None = None,
        patch: Mapping[str, Any] | None = None,
        overrides: Mapping[str, Any] | None = None,
        mode: ForkMode = "fork",
        on_divergence: OnDivergence = "live",
        idempotency_key: str | None = None,
    ) -> Run:
        """A new run from checkpoint `at` of the run (default: its start), its
        `forked_from` naming both; nothing of the original is written. `tool_results`
        replace recorded results (or answer the calls a `tool_calls` checkpoint waits
        for), `append` adds messages after it (text: a user's), or `patch` gives both
        whole; `overrides` replace fields of the run's configuration (`model`,
        `preamble`, `tools`, `limits`, `max_turns`, ...). `mode="replay"` answers each
        model call from the recording while its request is the recorded one
        (`on_divergence`: then `live` or `fail`). Retried safely, as `create` is
        (`idempotency_key`, or one made here). `Conflict` `fork-split` (its `problem`
        names the `tool_call_id`) where a call would be parted from its result."""
        body = _forks.fork_body(
            at=at,
            patch=patch,
            tool_results=tool_results,
            append=append,
            overrides=overrides,
            mode=mode,
            on_divergence=on_divergence,
        )
        call = _forks.fork_call(run_id, body, idempotency_key)
        return Run.model_validate(await self._json(call))

    async def forks_page(
        self, run_id: str, *, limit: int = 20, cursor: str | None = None
    ) -> RunPage:
        """One page of the runs forked or replayed from the run (`forked_from` names it),
        oldest first; a fork's own forks are listed on it."""
        call = _forks.forks_call(run_id, limit, cursor)
        return RunPage.model_validate(await self._json(call))

    async def forks(self, run_id: str, *, page_size: int = 100) -> AsyncIterator[Run]:
        """Every fork and replay of the run, oldest first, fetching pages as the iteration
        goes."""
        cursor: str | None = None
        while True:
            page = await self.forks_page(run_id, limit=page_size, cursor=cursor)
            for run in page.data:
                yield run
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def cancel(self, run_id: str) -> Run:
        """Cancel a run that has not ended (`Conflict` with `current_status` otherwise)."""
        return Run.model_validate(await self._json(Call("POST", _base.run_path(run_id, "/cancel"))))

    async def raise_limits(
        self, run_id: str, limits: Mapping[str, float | None] | None = None, **named: float | None
    ) -> Run:
        """Change a run's limits (`max_total_tokens`, `max_cost_usd`, `max_model_calls`,
        `max_duration_seconds`; those named are set, None removes one, the others are
        kept): a run suspended on its budget (`RaiseLimits`) is queued again. Needs
        `runs:operate` (an admin's or operator's key)."""
        body = {**(limits or {}), **named}
        call = Call("POST", _base.run_path(run_id, "/limits"), json=body, safe=True)
        return Run.model_validate(await self._json(call))

    async def browser_token(self, run_id: str, *, ttl: float | timedelta = 900) -> BrowserToken:
        """A signed token (valid `ttl`: seconds or a timedelta, at most a day) with which a
        browser reads this run's events, wait and messages, and nothing else; mint it in
        your backend and hand `.token` to the page (`?access_token=` for an EventSource)."""
        seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else float(ttl)
        if not 1 <= seconds <= 24 * 3600:
            raise InvalidInput(f"ttl must be 1 s to 24 h, not {seconds} s")
        body = {"ttl_seconds": round(seconds)}
        call = Call("POST", _base.run_path(run_id, "/browser-tokens"), json=body, safe=True)
        return BrowserToken.model_validate(await self._json(call))

    async def submit_tool_outputs(
        self, run_id: str, results: Iterable[ToolResult | Mapping[str, Any]]
    ) -> SubmitOutcome:
        """Answer some or all pending tool calls (an identical re-send is a no-op, so this
        is retried safely)."""
        call = Call(
            "POST",
            _base.run_path(run_id, "/tool-results"),
            json=_base.results_body(results),
            safe=True,
        )
        return SubmitOutcome.model_validate(await self._json(call))

    async def submit_via_callback(
        self, callback_url: str, results: Iterable[ToolResult | Mapping[str, Any]]
    ) -> SubmitOutcome:
        """Answer through a run's `callback_url` (needs no API key; none is sent), retried
        like `submit_tool_outputs`."""
        body = _base.results_body(results)
        call = Call("POST", callback_url, json=body, safe=True, anonymous=True)
        return SubmitOutcome.model_validate(await self._json(call))

    async def resolve(self, run_id: str, action: str, **fields: Any) -> Run:
        """Answer a parked invalid tool call: `action` is fail|retry|repair|skip|stop, with
        `feedback`, `tool_name` or `reason` as the action takes."""
        body = {"action": action, **{k: v for k, v in fields.items() if v is not None}}
        call = Call("POST", _base.run_path(run_id, "/resolution"), json=body)
        return Run.model_validate(await self._json(call))

    async def list_events(self, run_id: str, *, after: int = 0) -> builtins.list[Event]:
        """The event log as it is now (no waiting)."""
        call = Call("GET", _base.run_path(run_id, "/events"), {"after": after}, safe=True)
        return EventList.model_validate(await self._json(call)).data

    def events(self, run_id: str, *, after: int = 0) -> AsyncIterator[Event]:
        """The run's events after `after`, live until the run ends; a dropped connection
        is resumed with `Last-Event-ID` (no gap, no duplicate)."""
        return self._follow(run_id, after, None)

    async def wait(
        self,
        run_id: str,
        statuses: Statuses = None,
        *,
        timeout: float | None = None,
    ) -> Run:
        """The run once its status is one of `statuses` (default: suspended or ended) or it
        has ended; `WaitTimeout` after `timeout` seconds."""
        async with self.waiter(run_id, timeout=timeout) as waiter:
            return await waiter.until(statuses)

    def waiter(
        self, run_id: str, *, timeout: float | None = None, deadline: float | None = None
    ) -> AsyncRunWaiter:
        """Successive waits on one run within `timeout` seconds (or until the
        `time.monotonic()` `deadline`); use it as a context manager (`async with` for the
        `AsyncClient`)."""
        if deadline is None and timeout is not None:
            deadline = time.monotonic() + timeout
        return AsyncRunWaiter(self, run_id, deadline)

    async def _follow(
        self, run_id: str, after: int, deadline: float | None
    ) -> AsyncGenerator[Event, None]:
        path = _base.run_path(run_id, "/events")
        retry = self._client.retry
        attempt, started = 0, time.monotonic()
        while True:
            headers = {"Accept": "text/event-stream"}
            if after:
                headers["Last-Event-ID"] = str(after)
            read = _base.STREAM_READ_TIMEOUT
            if deadline is not None:
                read = max(0.001, min(read, deadline - time.monotonic()))
            timeout = _base.with_read_timeout(self._client.timeout, read)
            delay: float | None = None
            got = False
            try:
                async with self._client.http.stream(
                    "GET", path, headers=headers, timeout=timeout
                ) as r:
                    if r.status_code != 200:
                        await r.aread()
                        if _base.retryable_status(r.status_code, True):
                            wait = retry_after_of(r)
                            delay = retry.delay(attempt, time.monotonic() - started, wait)
                        if delay is None:
                            raise error_for(r)
                    else:
                        decoder = _base.SSEDecoder()
                        async for line in r.aiter_lines():
                            event = decoder.feed(line)
                            if deadline is not None and time.monotonic() >= deadline:
                                raise DeadlineReached
                            if event is None or event.seq <= after:
                                continue
                            got, after = True, event.seq
                            attempt, started = 0, time.monotonic()
                            yield event
                            if event.type in TERMINAL_EVENTS:
                                return
            except httpx.TransportError as exc:
                if deadline is not None and time.monotonic() >= deadline:
                    raise DeadlineReached from None
                delay = retry.delay(attempt, time.monotonic() - started)
                if delay is None:
                    raise APIConnectionError(f"GET {path} (stream): {exc!r}") from exc
            if delay is None and not got:  # the server ended the stream, having sent nothing
                run = await self.get(run_id)
                if run.is_terminal:
                    return  # nothing more will come
                # (a live run's stream is followed, whatever the budget says)
                delay = retry.delay(attempt, time.monotonic() - started) or retry.max_delay
            if delay:
                if deadline is not None:
                    delay = min(delay, max(0.0, deadline - time.monotonic()))
                await sleep(delay)
            attempt += 0 if got else 1


class AsyncRunWaiter:
    """Waits for one run's statuses, one wait after another.

    Each wait is the API's long poll, `GET /v1/runs/{id}/wait`, asked again whenever the
    server's hold (at most 60 s) ends first; nothing polls. Against a server without that
    route (an older one) it follows the run's live event stream instead, on one connection
    for all the waits: it reads the run, and again after each event that can lead to a
    status waited for."""

    def __init__(self, runs: AsyncRuns, run_id: str, deadline: float | None) -> None:
        self._runs = runs
        self.run_id = run_id
        self.deadline = deadline
        self.run: Run | None = None  # as last read
        self._events: AsyncGenerator[Event, None] | None = None

    async def until(self, statuses: Statuses = None) -> Run:
        """The run once its status is one of `statuses` (`RunStatus` members or their names,
        a collection or one; default: suspended or ended) or it has ended (`WaitTimeout` at
        the deadline)."""
        wanted = _base.statuses_of(statuses)
        if self._runs._wait_route:
            try:
                return await self._long_poll(wanted)
            except APIError as exc:
                if not _base.no_wait_route(exc):
                    raise
                self._runs._wait_route = False
        return await self._follow(wanted)

    async def _long_poll(self, statuses: frozenset[RunStatus]) -> Run:
        client = self._runs._client

        def call() -> Call:  # made for each attempt: a retry asks only for the time left
            left = None if self.deadline is None else self.deadline - time.monotonic()
            seconds = _base.MAX_WAIT_SECONDS if left is None else left
            return _base.wait_call(self.run_id, statuses, seconds, client.timeout)

        while True:
            try:
                response = await client.request(call, deadline=self.deadline)
            except DeadlineReached as exc:  # the API was away (or busy) until the deadline
                seen = f"still {self.run.status}" if self.run else "not read"
                raise WaitTimeout(f"run {self.run_id} is {seen}; {exc}", self.run) from None
            run = self.run = Run.model_validate(response.json())
            if run.status in statuses or run.is_terminal:
                return run
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise WaitTimeout(f"run {self.run_id} is still {run.status}", run)

    async def _follow(self, statuses: frozenset[RunStatus]) -> Run:
        run = self.run = await self._runs.get(self.run_id)
        if run.status in statuses or run.is_terminal:
            return run
        if self._events is None:
            self._events = self._runs._follow(self.run_id, 0, self.deadline)
        wake = _base.wake_events(statuses) | TERMINAL_EVENTS
        try:
            async for event in self._events:
                if event.type in wake:
                    run = self.run = await self._runs.get(self.run_id)
                    if run.status in statuses or run.is_terminal:
                        return run
        except DeadlineReached:
            raise WaitTimeout(f"run {self.run_id} is still {run.status}", run) from None
        self.run = await self._runs.get(self.run_id)  # the stream ended: so has the run
        return self.run

    async def aclose(self) -> None:
        if self._events is not None:
            await self._events.aclose()

    async def __aenter__(self) -> AsyncRunWaiter:
        return self

    async def __aexit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()
