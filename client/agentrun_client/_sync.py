# Generated from _async.py by client/scripts/generate_sync.py (unasync): do not edit;
# edit _async.py and run `make sync-client`.
"""The client, written once: `AsyncClient` and `AsyncQueues` (its runs in `_async_runs.py`,
its approvals in `_async_approvals.py`, its agents in `_async_agents.py`, its schedules in
`_async_schedules.py`). `_sync.py`
(`Client`, `Queues`) is generated from this file by unasync (`make sync-client`,
client/scripts/generate_sync.py; a test fails when it is stale): edit this file, then
regenerate. What unasync cannot turn into its sync form
(sleeping, executing tools, serving a queue) goes through `_async_shims.py` and its sync
twin `_sync_shims.py`."""

from __future__ import annotations

import builtins
import dataclasses
import math
import time
from collections.abc import (
    Callable,
    Iterable,
    Mapping,
)
from types import TracebackType
from typing import Any, Unpack

import httpx

from agentrun_client import _approvals, _base, _tree
from agentrun_client._approvals import OnApproval
from agentrun_client._base import Call, DeadlineReached, RetryPolicy, RunOptions
from agentrun_client._sync_agents import Agents
from agentrun_client._sync_approvals import Approvals
from agentrun_client._sync_runs import Runs
from agentrun_client._sync_schedules import Schedules
from agentrun_client._sync_shims import QueueExecutor, SyncToolRunner, sleep
from agentrun_client.errors import (
    APIConnectionError,
    APITimeoutError,
    Conflict,
    ValidationError,
    WaitTimeout,
    error_for,
    retry_after_of,
)
from agentrun_client.models import (
    SUSPENDED_OR_FINISHED,
    ApprovalCall,
    ApproveToolCalls,
    LeasedCall,
    LeaseExtended,
    LeaseList,
    Run,
    RunStatus,
    SubmitOutcome,
    SubmitToolResults,
    Usage,
)
from agentrun_client.queue import heartbeat_call, lease_call, result_call
from agentrun_client.tools import ToolRegistry


class Client:
    """The API: `runs`, `agents`, `schedules`, `approvals`, `queues`, `usage`, and the
    inline executor (`run`, `execute`).

    `base_url` and `api_key` default to `AGENTRUN_BASE_URL` (else http://127.0.0.1:8000)
    and `AGENTRUN_API_KEY`. `retry` bounds the retries of safe calls (`RetryPolicy`);
    `http_client` replaces the underlying httpx client (an `httpx.Client` for `Client`, an
    `httpx.AsyncClient` for `AsyncClient`; its base URL and headers are then the caller's to
    set).
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = 30.0,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        url, default_headers = _base.settings(base_url, api_key)
        self.base_url = url
        self.retry = retry or RetryPolicy()
        self.timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        self._owns_http = http_client is None
        self.http = http_client or httpx.Client(
            base_url=url,
            headers={**default_headers, **(headers or {})},
            timeout=self.timeout,
            transport=transport,
        )
        self.runs = Runs(self)
        self.approvals = Approvals(self)
        self.agents = Agents(self)
        self.schedules = Schedules(self)
        self.queues = Queues(self)

    def close(self) -> None:
        if self._owns_http:
            self.http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def request(
        self, call: Call | Callable[[], Call], *, deadline: float | None = None
    ) -> httpx.Response:
        """Send `call`, retrying within the policy; a refusal raises its `APIError`.

        `call` may be a function that makes the request anew for each attempt (a long poll
        asks for the time left). No retry waits past a `time.monotonic()` `deadline`: at
        it, `DeadlineReached`."""
        failed = 0.0  # when the first attempt failed: the retry budget counts from there
        attempt = 0
        while True:
            current = call() if callable(call) else call
            request = _base.build_request(self.http, current)  # (`InvalidInput`: nothing sent)
            try:
                response = self.http.send(request)
            except httpx.TransportError as exc:
                failed = failed or time.monotonic()
                delay = None
                if _base.retryable_error(exc, current.safe):
                    delay = self.retry.delay(attempt, time.monotonic() - failed)
                cause = f"{current.method} {current.path}: {type(exc).__name__}: {exc}"
                if delay is None:
                    kind = (
                        APITimeoutError
                        if isinstance(exc, httpx.TimeoutException)
                        else APIConnectionError
                    )
                    raise kind(cause) from exc
            else:
                if response.is_success:
                    return response
                failed = failed or time.monotonic()
                delay = None
                if _base.retryable_status(response.status_code, current.safe):
                    delay = self.retry.delay(
                        attempt, time.monotonic() - failed, retry_after_of(response)
                    )
                if delay is None:
                    raise error_for(response)
                cause = f"{current.method} {current.path}: {response.status_code}"
            if deadline is not None and time.monotonic() + delay >= deadline:
                sleep(max(0.0, deadline - time.monotonic()))
                raise DeadlineReached(cause)
            sleep(delay)
            attempt += 1

    def usage(self, *, from_: Any = None, to: Any = None) -> Usage:
        """Tokens and cost of every model call in a time range (default: the last day);
        `from_`/`to` are aware datetimes or RFC 3339 text."""
        call = Call("GET", "/v1/usage", params=_base.usage_params(from_, to), safe=True)
        response = self.request(call)
        return Usage.model_validate(response.json())

    def run(
        self,
        prompt: str,
        *,
        tools: ToolRegistry,
        model: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        idempotency_key: str | None = None,
        on_approval: OnApproval | None = None,
        **options: Unpack[RunOptions],
    ) -> Run:
        """Create a run with the registry's tools, execute its tool calls here whenever it
        (or a run below it: agent tools start child runs) suspends for them, and return it
        once it has ended (or waits for something only a person can answer: a
        `resolve_invalid_tool_call`, a budget, or gated calls that `on_approval` did not
        decide). `agent="name"` (or `"name@2"`) starts it from a named agent instead: the
        agent's model and tools are the run's, and the registry executes the calls of
        those tools it has. `AsyncClient` runs the tools on the running event loop,
        `Client` on an event loop of this call's own (inside async code use
        `AsyncClient`); sync functions run in threads (see `ToolRegistry`).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        sent = None if options.get("agent") is not None else tools  # (the agent's own)
        run = self.runs.create(
            prompt=prompt, model=model, tools=sent, idempotency_key=idempotency_key, **options
        )
        return self.execute(run.id, tools, deadline=deadline, on_approval=on_approval)

    def serve_queue(
        self, tools: ToolRegistry, *, queue: str, concurrency: int = 4, **options: Any
    ) -> None:
        """Serve `tools` to the calls of `queue`: an `AsyncQueueExecutor` until cancelled
        (`AsyncClient`), a `QueueExecutor` until SIGTERM/SIGINT in the main thread (`Client`);
        docs/queue.md (`options`: lease_seconds, wait, grace, executor). For a clean stop,
        make the executor yourself and call its `stop()`."""
        executor = QueueExecutor(self, tools, queue=queue, concurrency=concurrency, **options)
        executor.run()

    def execute(
        self,
        run_id: str,
        tools: ToolRegistry,
        *,
        deadline: float | None = None,
        on_approval: OnApproval | None = None,
    ) -> Run:
        """Serve an existing run's tool calls from `tools` until it ends (what `run` does
        after creating it), and those of the runs below it: a run waiting on its child runs
        is waited on while its descendants' calls are executed here and answered to the
        run that made each. Gated calls (`approve_tool_calls`) go to `on_approval`, once
        each; those it leaves undecided (or all, without it) are for a person: the run is
        returned once nothing else in its tree is open."""
        statuses = SUSPENDED_OR_FINISHED
        asked: set[tuple[str, str]] = set()  # (run, gated call) put to `on_approval` already
        slice_: float | None = None  # of a wait in the tree (`_tree.Watch.bounded`)
        waiter = self.runs.waiter(run_id, deadline=deadline)
        with SyncToolRunner() as runner, waiter:
            while True:
                run = waiter.until(statuses)
                statuses = SUSPENDED_OR_FINISHED
                if run.is_terminal:
                    return run
                if run.status != RunStatus.REQUIRES_ACTION:
                    continue  # it moved on: until its next suspension
                if self._serve(runner, tools, run, asked, on_approval):
                    slice_ = None
                    continue  # the run as it is now: released calls, or moved on
                tree = self._subtree(run)  # (the run too: it may have moved on since)
                served = False
                for other in tree:
                    if other.status == RunStatus.REQUIRES_ACTION:
                        served |= self._serve(runner, tools, other, asked, on_approval)
                if served:
                    slice_ = None
                    continue
                watch = _tree.watch(tree)
                if watch is None:
                    if tree[0].status != RunStatus.REQUIRES_ACTION:
                        continue  # it moved on (or ended) since it was read
                    return tree[0]  # what is left is a person's: a resolution, a budget
                    # (`runs.resolve`, `runs.raise_limits`), gated calls (`approvals`)
                if watch.run_id == run_id and not watch.bounded:
                    statuses = watch.statuses  # every call answered (or queued): until
                    continue  # it moves on
                slice_ = _tree.next_slice(slice_) if watch.bounded else None
                if self._watch(watch, slice_, deadline, run):
                    slice_ = None

    def _serve(
        self,
        runner: SyncToolRunner,
        tools: ToolRegistry,
        run: Run,
        asked: set[tuple[str, str]],
        on_approval: OnApproval | None,
    ) -> bool:
        """Execute a suspended run's open calls and submit the results to it; put its fresh
        gated calls to `on_approval`. Whether anything was sent."""
        if not isinstance(run.required_action, SubmitToolResults | ApproveToolCalls):
            return False  # its children's to answer, or a person's
        # (Calls of a queue are its executors' to run: docs/queue.md.)
        calls = [c for c in run.pending_tool_calls if c.queue is None]
        if calls:
            results = runner.execute_all(tools, calls, run_id=run.id)
            path = _base.run_path(run.id, "/tool-results")
            self._send_quietly(Call("POST", path, json=_base.results_body(results)))
        decided = False
        if on_approval is not None:
            fresh = [a for a in run.pending_approvals if (run.id, a.id) not in asked]
            asked.update((run.id, a.id) for a in fresh)
            decided = self._decide(runner, run.id, fresh, on_approval)
        return bool(calls) or decided

    def _subtree(self, run: Run) -> builtins.list[Run]:
        """`run`, then the runs below it, as they are now (only `run` when it has none, or
        the server knows no trees)."""
        if run.root_run_id is None:
            return [run]  # (an older server: no agent tools, no `root_run_id` filter)
        found: builtins.list[Run] = []
        for other in self.runs.list(root_run_id=run.root_run_id):
            found.append(other)
        return _tree.subtree(found, run.id) or [run]

    def _watch(
        self, watch: _tree.Watch, slice_: float | None, deadline: float | None, root: Run
    ) -> bool:
        """Wait on one run of `root`'s tree until it reaches `watch.statuses` (at most
        `slice_` seconds); whether it did. `WaitTimeout` (naming `root`) at `deadline`."""
        until = deadline
        if slice_ is not None:
            until = min(math.inf if deadline is None else deadline, time.monotonic() + slice_)
        try:
            with self.runs.waiter(watch.run_id, deadline=until) as waiter:
                waiter.until(watch.statuses)
        except WaitTimeout as exc:
            if deadline is not None and time.monotonic() >= deadline:
                raise WaitTimeout(
                    f"run {root.id} is still {root.status}, waiting on {watch.run_id} of its "
                    f"tree ({exc})",
                    root,
                ) from None
            return False
        return True

    def _send_quietly(self, call: Call) -> None:
        """An executor's answer (results, decisions), safe to repeat; one the run no longer
        takes is not an error: answered by someone else meanwhile, or the run moved on."""
        try:
            self.request(dataclasses.replace(call, safe=True))
        except Conflict:
            pass
        except ValidationError as exc:
            if exc.code != "tool-call-not-pending":
                raise

    def _decide(
        self,
        runner: SyncToolRunner,
        run_id: str,
        calls: Iterable[ApprovalCall],
        on_approval: OnApproval,
    ) -> bool:
        """`on_approval`'s decisions on `calls`, sent; whether any was."""
        decisions = []
        for call in calls:
            answer = runner.ask(on_approval, call)
            if (item := _approvals.as_decision(call, answer)) is not None:
                decisions.append(item)
        if not decisions:
            return False
        body = _approvals.decisions_body(decisions)
        self._send_quietly(Call("POST", _base.run_path(run_id, "/approvals"), json=body))
        return True


class Queues:
    """`/v1/queues`: lease, heartbeat, complete (the executors: `AsyncQueueExecutor`,
    `QueueExecutor`)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def lease(
        self,
        queue: str,
        *,
        limit: int = 1,
        wait: float = 30.0,
        lease_seconds: float = 60.0,
        executor: str | None = None,
    ) -> builtins.list[LeasedCall]:
        """Up to `limit` calls of `queue`, waiting up to `wait` seconds for one."""
        response = self._client.request(lease_call(queue, limit, wait, lease_seconds, executor))
        return LeaseList.model_validate(response.json()).calls

    def heartbeat(
        self, queue: str, lease_token: str, *, lease_seconds: float = 60.0
    ) -> LeaseExtended:
        """Extend a lease (`Conflict` with code `tool-call-lease-lost` once it moved on)."""
        response = self._client.request(heartbeat_call(queue, lease_token, lease_seconds))
        return LeaseExtended.model_validate(response.json())

    def complete(
        self, queue: str, lease_token: str, output: Any, *, is_error: bool = False
    ) -> SubmitOutcome:
        """Answer a leased call (retried safely: the same answer again is a no-op)."""
        response = self._client.request(result_call(queue, lease_token, output, is_error))
        return SubmitOutcome.model_validate(response.json())
