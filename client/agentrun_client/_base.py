"""What the client's calls share and that does no IO: the retry policy, the request
bodies and their encoding check, the server-sent-events decoder and which events can wake
a `wait`."""

from __future__ import annotations

import json
import math
import os
import random
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict

import httpx

from agentrun_client.errors import InvalidInput
from agentrun_client.models import (
    SUSPENDED_OR_FINISHED,
    TERMINAL,
    Event,
    EventType,
    RunStatus,
    ToolResult,
)

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
#: The server sends a heartbeat every 15 s: a stream silent for this long is dead.
STREAM_READ_TIMEOUT = 60.0


class HasDefinitions(Protocol):
    """A source of tool definitions (`ToolRegistry`)."""

    def definitions(self) -> list[dict[str, Any]]: ...


Tools = HasDefinitions | Sequence[Mapping[str, Any]]


#: What a continuing run does when its conversation's latest run is still active.
IfBusy = Literal["reject", "enqueue", "interrupt"]


class RunOptions(TypedDict, total=False):
    """The optional fields of `POST /v1/runs` (docs/client.md says what each does).
    `previous_run_id` continues a completed run: its conversation, and its `model`,
    `preamble`, `tools`, `tool_choice`, `tool_concurrency`, `invalid_tool_call` and
    `webhook` unless given here; `if_busy` (`reject`, `enqueue`, `interrupt`) says what to
    do when that conversation's latest run is still active. `agent` (`name` or `name@2`)
    starts the run from a named agent: its fields are the run's (send no `model` or
    `tools`), and only `metadata`, `limits` (narrower), `webhook`, `priority`,
    `expires_in`, `stream` and `history` may be added."""

    agent: str
    previous_run_id: str
    if_busy: IfBusy
    preamble: str
    history: Sequence[Mapping[str, Any]]
    tool_choice: str | Mapping[str, Any]
    max_turns: int
    limits: Mapping[str, float]  # max_total_tokens, max_cost_usd, max_model_calls, ...
    tool_concurrency: int
    invalid_tool_call: Mapping[str, Any]
    webhook: str | Mapping[str, Any]
    expires_in: float
    metadata: Mapping[str, Any]
    stream: bool
    tool_queue: str
    priority: int  # -100..100, default 0: a higher one is claimed first
    approval: str | Mapping[str, Any]
    approval_timeout: float
    approval_on_timeout: str
    compaction: Mapping[str, Any]  # threshold_tokens, model, keep_recent_turns, instructions


def settings(base_url: str | None, api_key: str | None) -> tuple[str, dict[str, str]]:
    """The base URL and default headers (from the arguments, else `AGENTRUN_BASE_URL` and
    `AGENTRUN_API_KEY`)."""
    url = base_url or os.environ.get("AGENTRUN_BASE_URL") or DEFAULT_BASE_URL
    key = api_key if api_key is not None else os.environ.get("AGENTRUN_API_KEY")
    headers = {"User-Agent": "agentrun-client/0.1"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return url.rstrip("/"), headers


@dataclass(frozen=True)
class RetryPolicy:
    """Retries of calls that are safe to repeat, within a bounded budget.

    Safe calls (GET, creates with an `Idempotency-Key`, tool-result submissions, which the
    API accepts again as a no-op) are retried on connection errors, timeouts, 502/503/504
    and 429; other calls only when the request cannot have been processed (the connection
    was never made, or 429). `Retry-After` is honoured; otherwise the delay doubles from
    `base_delay` up to `max_delay`, with jitter (each delay is between half its ceiling and
    the ceiling). No retry starts once `max_elapsed` seconds would have passed since the
    first failure, nor after `max_retries` retries.

    The default rides out an API that is away for about 13-15 s (a restart takes a few):
    0.25 s doubling to 2 s, for 15 s from the first failure.
    """

    max_retries: int = 20
    max_elapsed: float = 15.0
    base_delay: float = 0.25
    max_delay: float = 2.0
    rng: random.Random = field(default_factory=random.Random, compare=False, repr=False)

    def backoff(self, attempt: int) -> float:
        ceiling = min(self.max_delay, self.base_delay * 2.0**attempt)
        return ceiling / 2 + self.rng.uniform(0, ceiling / 2)

    def delay(self, attempt: int, elapsed: float, retry_after: float | None = None) -> float | None:
        """Seconds to wait before retry number `attempt + 1`, `elapsed` seconds after the
        first failure; None when the budget is spent."""
        if attempt >= self.max_retries:
            return None
        wait = retry_after if retry_after is not None else self.backoff(attempt)
        if elapsed + wait > self.max_elapsed:
            return None
        return wait


NO_RETRIES = RetryPolicy(max_retries=0)
RETRY_STATUSES_SAFE = frozenset({429, 502, 503, 504})


def retryable_status(status: int, safe: bool) -> bool:
    return status in RETRY_STATUSES_SAFE if safe else status == 429


def retryable_error(exc: httpx.TransportError, safe: bool) -> bool:
    """A connection never made is always safe to retry; anything later only when the call
    is."""
    return safe or isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)


@dataclass(frozen=True)
class Call:
    """One API request; `safe` marks it as repeatable (see `RetryPolicy`); `path` may be
    an absolute URL."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    json: Any = None
    headers: Mapping[str, str] | None = None
    safe: bool = False
    anonymous: bool = False  # sent without the API key (to a callback URL)
    timeout: httpx.Timeout | None = None  # instead of the client's


def build_request(http: httpx.Client | httpx.AsyncClient, call: Call) -> httpx.Request:
    """`call` as a request of `http`; what cannot be encoded (text with a lone surrogate,
    which UTF-8 cannot carry; a header outside ASCII) raises `InvalidInput`, before
    anything is sent."""
    try:
        request = http.build_request(
            call.method,
            call.path,
            params=call.params,
            json=call.json,
            headers=call.headers,
            timeout=call.timeout or http.timeout,
        )
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{call.method} {call.path!r}: {_unencodable(call, exc)}") from exc
    except (httpx.InvalidURL, ValueError) as exc:
        if found := nonfinite_in(call.json, "body"):
            reason = f"{found}, which JSON cannot carry: nothing was sent"
        else:
            reason = f"not an http(s) URL ({exc}): nothing was sent"
        raise InvalidInput(f"{call.method} {call.path!r}: {reason}") from exc
    if request.url.scheme not in ("http", "https"):  # (a callback URL is taken whole)
        raise InvalidInput(f"{call.method} {call.path!r}: not an http(s) URL: nothing was sent")
    if call.anonymous:
        request.headers.pop("authorization", None)
    return request


def surrogate_in(value: Any, where: str) -> str | None:
    """Where `value` (JSON-like) holds a surrogate code point, said for a person; None if
    nowhere. Python text may hold one (`"\\ud800"`, half of a pair split apart); Unicode
    text cannot, so neither can JSON in UTF-8."""
    if isinstance(value, str):
        for i, char in enumerate(value):
            if "\ud800" <= char <= "\udfff":
                return f"{where} holds a lone surrogate {char!r} at index {i}"
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and (found := surrogate_in(key, f"a key of {where}")):
                return found
            if found := surrogate_in(item, f"{where}.{key!s}"):
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if found := surrogate_in(item, f"{where}[{i}]"):
                return found
    return None


#: What the service takes in JSON (its rule: app/service/jsonrules.py, docs/reference.md):
#: integers within 64 bits, signed or unsigned; text without NUL; at most 128 levels of
#: arrays and objects counted from the top of a body, where a tool result's output starts
#: three down (`{"results": [{"output": ...}]}`).
MIN_JSON_INT, MAX_JSON_INT = -(2**63), 2**64 - 1
OUTPUT_MAX_DEPTH = 128 - 3


def output_problem(output: Any) -> str | None:
    """Why the service would refuse `output` (JSON-like) as a tool result, said for a
    person; None if it would take it. Iterative: a value nested too deep is the point."""
    if found := surrogate_in(output, "the output"):
        return f"{found}, which is not Unicode text"
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(output, ())]
    while stack:
        item, loc = stack.pop()
        if isinstance(item, Mapping | list | tuple):
            if len(loc) >= OUTPUT_MAX_DEPTH:
                limit = OUTPUT_MAX_DEPTH
                return f"the output is nested deeper than the service takes ({limit} levels)"
            if isinstance(item, Mapping):
                for key, child in item.items():
                    if isinstance(key, str) and "\x00" in key:
                        return f"a key of {_where(loc)} contains a NUL character (U+0000)"
                    stack.append((child, (*loc, str(key))))
            else:
                stack.extend((child, (*loc, i)) for i, child in enumerate(item))
        elif isinstance(item, str) and "\x00" in item:
            return f"{_where(loc)} contains a NUL character (U+0000)"
        elif type(item) is int and not MIN_JSON_INT <= item <= MAX_JSON_INT:
            return f"{_where(loc)} is an integer outside the 64-bit range"
    return None


def _where(loc: tuple[str | int, ...]) -> str:
    return "the output" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)


def nonfinite_in(value: Any, where: str) -> str | None:
    """Where `value` (JSON-like) holds NaN or an infinity, which JSON has no number for."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where} is {value!r}"
    if isinstance(value, Mapping):
        for key, item in value.items():
            if found := nonfinite_in(item, f"{where}.{key!s}"):
                return found
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if found := nonfinite_in(item, f"{where}[{i}]"):
                return found
    return None


def _unencodable(call: Call, exc: UnicodeEncodeError) -> str:
    found = surrogate_in(call.json, "body") or surrogate_in(dict(call.params or {}), "query")
    if found:
        return f"{found}, which is not Unicode text: nothing was sent"
    for name, value in (call.headers or {}).items():
        if not value.isascii():
            return f"header {name} is {value!r}: HTTP headers are ASCII; nothing was sent"
    return f"cannot be encoded ({exc.reason}): nothing was sent"


def with_read_timeout(timeout: httpx.Timeout, read: float) -> httpx.Timeout:
    return httpx.Timeout(connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool)


def tool_definitions(tools: Tools | None) -> list[dict[str, Any]]:
    if tools is None:
        return []
    if hasattr(tools, "definitions"):
        return list(tools.definitions())
    return [dict(t) for t in tools]


def create_call(
    prompt: str,
    model: Mapping[str, Any] | None,
    tools: Tools | None,
    idempotency_key: str | None,
    options: Mapping[str, Any],
) -> Call:
    """`POST /v1/runs`, made safe to retry by an `Idempotency-Key` (one is generated when
    none is given: a retry after a lost response replays the run instead of making a
    second). `model` may be left out only with `previous_run_id` (it is inherited)."""
    body: dict[str, Any] = {"prompt": prompt}
    if model is not None:
        body["model"] = dict(model)
    definitions = tool_definitions(tools)
    if definitions:
        body["tools"] = definitions
    for name, value in options.items():
        if value is None:
            continue
        if name == "webhook" and isinstance(value, str):
            value = {"url": value}
        body[name] = value
    key = idempotency_key or f"agentrun-client-{uuid.uuid4()}"
    return Call("POST", "/v1/runs", json=body, headers={"Idempotency-Key": key}, safe=True)


def results_body(results: Iterable[ToolResult | Mapping[str, Any]]) -> dict[str, Any]:
    items = [
        r.model_dump(mode="json", include={"tool_call_id", "output", "is_error"})
        if isinstance(r, ToolResult)
        else dict(r)
        for r in results
    ]
    return {"results": items}


def usage_params(from_: Any, to: Any) -> dict[str, str]:
    params: dict[str, str] = {}
    for name, value in (("from", from_), ("to", to)):
        if value is None:
            continue
        if hasattr(value, "isoformat"):
            if value.tzinfo is None:
                raise InvalidInput(f"{name} must be timezone-aware")
            value = value.isoformat()
        params[name] = str(value)
    return params


def page_params(limit: int, cursor: str | None) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": limit}
    if cursor is not None:
        params["cursor"] = cursor
    return params


def run_path(run_id: str, suffix: str = "") -> str:
    if not run_id or not all(c.isalnum() or c in "_-" for c in run_id):
        raise InvalidInput(f"not a run id: {run_id!r}")
    return f"/v1/runs/{run_id}{suffix}"


class SSEDecoder:
    """Server-sent events, one line at a time; a complete message is a run `Event`
    (heartbeat comments and messages without data are skipped)."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> Event | None:
        if line == "":
            data, self._data = self._data, []
            return Event.model_validate(json.loads("\n".join(data))) if data else None
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))
        return None  # `id` and `event` repeat what the data holds; `retry` is not used


#: The events after which a run may be in each status.
_REACHES: dict[RunStatus, frozenset[str]] = {
    RunStatus.QUEUED: frozenset(
        {
            EventType.RUN_CREATED,
            EventType.RUN_RESUMED,
            EventType.RUN_LEASE_LOST,
            EventType.RUN_RELEASED,
            EventType.RUN_RETRIED,
            EventType.MODEL_FAILED,  # a backoff puts the run back in the queue
        }
    ),
    RunStatus.RUNNING: frozenset({EventType.RUN_CLAIMED}),
    RunStatus.REQUIRES_ACTION: frozenset(
        {
            EventType.RUN_REQUIRES_ACTION,
            EventType.RUN_CHILDREN_STARTED,  # (a round of agent tools' calls only: no
            # `run.requires_action`, the run waits on its child runs)
        }
    ),
    RunStatus.COMPLETED: frozenset({EventType.RUN_COMPLETED}),
    RunStatus.FAILED: frozenset({EventType.RUN_FAILED}),
    RunStatus.CANCELLED: frozenset({EventType.RUN_CANCELLED}),
    RunStatus.EXPIRED: frozenset({EventType.RUN_EXPIRED}),
}


#: What an executor waits for when every pending call is answered, some by others.
MOVED_ON: frozenset[RunStatus] = TERMINAL | {RunStatus.QUEUED, RunStatus.RUNNING}


def wake_events(statuses: Iterable[RunStatus]) -> frozenset[str]:
    """Event types after which `wait` looks at the run again."""
    out: set[str] = set()
    for s in statuses:
        out |= _REACHES[s]
    return frozenset(out)


def status_of(status: RunStatus | str) -> RunStatus:
    """`status` as a `RunStatus` (a member or its name); `InvalidInput` for another."""
    try:
        return RunStatus(status)
    except ValueError as exc:
        raise InvalidInput(f"{exc}; the statuses are {', '.join(RunStatus)}") from None


def statuses_of(statuses: Iterable[RunStatus | str] | None) -> frozenset[RunStatus]:
    if statuses is None:
        return SUSPENDED_OR_FINISHED
    if isinstance(statuses, str):
        statuses = [statuses]
    chosen = frozenset(status_of(s) for s in statuses)
    if not chosen:
        raise InvalidInput("wait for at least one status")
    return chosen


#: The longest the server holds `GET /v1/runs/{id}/wait` (its `MAX_WAIT_SECONDS`).
MAX_WAIT_SECONDS = 60.0
#: How much longer than the wait it asked for the client reads before giving up.
WAIT_READ_MARGIN = 15.0


def wait_call(
    run_id: str, statuses: frozenset[RunStatus], seconds: float, base: httpx.Timeout
) -> Call:
    """`GET /v1/runs/{id}/wait` for `statuses` or an end (an ended run does not change again),
    held at most `seconds` (0: answer at once)."""
    wanted = sorted(s.value for s in statuses | TERMINAL)
    seconds = max(0.0, min(MAX_WAIT_SECONDS, seconds))
    params = {"status": wanted, "timeout": f"{seconds:.3f}"}
    return Call(
        "GET",
        run_path(run_id, "/wait"),
        params=params,
        safe=True,
        timeout=with_read_timeout(base, seconds + WAIT_READ_MARGIN),
    )


def no_wait_route(exc: Exception) -> bool:
    """The server (or a proxy before it) has no `/wait` route: an older server, whose runs
    are waited on over their event stream instead."""
    status = getattr(exc, "status", None)
    code = getattr(exc, "code", None)
    return status == 405 or (status == 404 and code != "run-not-found")


class DeadlineReached(Exception):
    """Internal: a stream followed with a deadline reached it."""
