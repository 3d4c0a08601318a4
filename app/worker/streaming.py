"""Streamed model calls for runs created with `"stream": true`.

The worker reads the provider's stream (`Provider.stream`: `TextDelta` items, then one
`TurnComplete`), keeps the lease alive meanwhile, and publishes the text as `model.delta`
run events (`{"turn": n, "text": "..."}`), batched so that a long answer is a handful of
writes rather than one per token. The events are appended under the lease without moving
the fencing token (`RunStore.append_events`), so the claim's final transition still
applies. The finished turn then enters the run through the core's streamed path
(`record_streamed_completion_call` + `streamed_turn`), so a streamed and a blocking run of
the same conversation end with identical histories and usage.

If a streamed model call fails (a `ProviderError` mid-stream), the deltas already published
stay in the log; the `model.failed` event that follows tells a reader that the partial text
of that turn is void and the turn will be asked again. The usage the provider reports
mid-stream (`UsageReport`) is kept in the call's `Progress`: an aborted call bills it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.core import (
    AgentRun,
    CompletionIdentity,
    Continue,
    ModelTurn,
    ModelTurnOutcome,
    StreamedTurn,
    ToolCall,
    Usage,
)
from app.core.events import EventType
from app.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ProviderTurn,
    TextDelta,
    TurnComplete,
    UsageReport,
)
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from app.worker.lease import Claim, Lease, LeaseLost

DELTA_EVENT = EventType.MODEL_DELTA
#: A batch of deltas is written at most this long after its first fragment arrived...
FLUSH_INTERVAL = 0.05
#: ...or as soon as it holds this many characters.
FLUSH_CHARS = 1024


@dataclass(slots=True)
class Progress:
    """What a model call has received so far: the usage the provider reported (None
    before any report: a blocking call's is only in its answer)."""

    started: float  # (the clock's monotonic reading when the call began)
    usage: Usage | None = None

    def aborted(
        self,
        request: ModelRequest,
        model: Mapping[str, Any],
        usage: dict[str, int],
        cost_usd: float | None,
        streamed: bool,
        price_source: str | None = None,
        *,
        ended: float,
    ) -> NewEvent:
        """The `model.aborted` event of the call, abandoned at `ended` (the run left the
        worker; the clock's monotonic reading), with what the provider reported before."""
        return NewEvent(
            EventType.MODEL_ABORTED,
            {
                "turn": request.turn,
                "attempt": request.attempt,
                "provider": model["provider"],
                "model": model["name"],
                "usage": usage,
                "usage_reported": self.usage is not None,
                "cost_usd": cost_usd,
                "price_source": price_source,
                "latency_ms": round((ended - self.started) * 1000, 2),
                **({"stream": True} if streamed else {}),
            },
        )


class DeltaPublisher:
    """Batches text fragments into `model.delta` events, written by one background task.

    `add` never waits for the database: fragments accumulate while a write is in flight,
    and the next write takes all of them as one event. A refused write (the fencing token
    moved: cancelled, reaped) ends the publisher with `LeaseLost`, raised by the next `add`
    or by `close`.
    """

    def __init__(
        self,
        store: RunStore,
        run_id: str,
        version: int,
        turn: int,
        clock: Callable[[], datetime],
        *,
        interval: float = FLUSH_INTERVAL,
        max_chars: int = FLUSH_CHARS,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.version = version
        self.turn = turn
        self.clock = clock
        self.interval = interval
        self.max_chars = max_chars
        self.writes = 0
        self._buffer: list[str] = []
        self._size = 0
        self._closing = False
        self._data = asyncio.Event()  # something to write (or closing)
        self._urgent = asyncio.Event()  # write now: the batch is full, or closing
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def add(self, text: str) -> None:
        if self._task is not None and self._task.done():
            self._task.result()  # raise what ended the writer (LeaseLost, a DB error)
        if not text:
            return
        self._buffer.append(text)
        self._size += len(text)
        self._data.set()
        if self._size >= self.max_chars:
            self._urgent.set()

    async def close(self) -> None:
        """Write what is buffered and stop; raises what ended the writer, if anything."""
        self._closing = True
        self._data.set()
        self._urgent.set()
        if self._task is not None:
            await self._task

    def cancel(self) -> None:
        """Stop without writing the rest (the claim is being abandoned)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()

    async def _run(self) -> None:
        while True:
            await self._data.wait()
            self._data.clear()
            if not self._urgent.is_set():
                # Let more fragments gather, up to `interval` or a full batch.
                with contextlib.suppress(TimeoutError):  # (not wait_for: app.worker.worker)
                    async with asyncio.timeout(self.interval):
                        await self._urgent.wait()
            self._urgent.clear()
            await self._write()
            if self._closing and not self._buffer:
                return

    async def _write(self) -> None:
        if not self._buffer:
            return
        text = "".join(self._buffer)
        self._buffer.clear()
        self._size = 0
        event = NewEvent(DELTA_EVENT, {"turn": self.turn, "text": text})
        if not await self.store.append_events(self.run_id, self.version, [event], self.clock()):
            raise LeaseLost()
        self.writes += 1


async def stream_answer(
    lease: Lease,
    claim: Claim,
    provider: Provider,
    request: ModelRequest,
    *,
    interval: float = FLUSH_INTERVAL,
    max_chars: int = FLUSH_CHARS,
    progress: Progress | None = None,
) -> ProviderTurn:
    """Read one model call as a stream, heartbeating the lease and publishing its text
    (and keeping the usage reported so far in `progress`); the assembled turn. Raises
    `ProviderError` (the worker backs off as for a blocking call) or `LeaseLost`."""
    progress = progress if progress is not None else Progress(lease.clock.monotonic())
    publisher = DeltaPublisher(
        lease.store,
        claim.record.id,
        claim.version,
        request.turn,
        lease.clock.now,
        interval=interval,
        max_chars=max_chars,
    )

    async def consume() -> ProviderTurn:
        publisher.start()
        try:
            answer = await _read(provider.stream(request), publisher, provider.name, progress)
        except ProviderError:
            # Publish what already arrived (readers saw the stream start), then fail;
            # LeaseLost from the publisher takes precedence.
            await publisher.close()
            raise
        except BaseException:
            publisher.cancel()
            raise
        await publisher.close()
        return answer

    return await lease.hold(claim, consume())


async def _read(
    stream: AsyncIterator[Any], publisher: DeltaPublisher, provider_name: str, progress: Progress
) -> ProviderTurn:
    answer: ProviderTurn | None = None
    try:
        async for item in stream:
            if isinstance(item, TextDelta):
                publisher.add(item.text)
            elif isinstance(item, UsageReport):
                progress.usage = item.usage
            elif isinstance(item, TurnComplete):
                answer = item.turn
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            await aclose()
    if answer is None:
        raise ProviderError(
            f"{provider_name} stream ended without a complete turn",
            retryable=True,
            provider=provider_name,
        )
    return answer


def ingest_streamed(run: AgentRun, turn: ModelTurn) -> ModelTurnOutcome:
    """Feed a fully received streamed turn to the run.

    Normally through the core's streamed path: one `record_streamed_completion_call`
    (usage, identity, finish reason, raw) and then `streamed_turn`, which parks the turn
    exactly as `model_response` would park a valid one (`Continue(False)`).

    `streamed_turn` fails fast on a tool call outside the allowed set (`UnknownToolCall`,
    behaviour spec §3.4): the streamed path leaves invalid-call recovery to a driver that
    resolves calls mid-stream (`resolve_streamed_invalid_tool_call`). This worker reads the
    whole stream before validating anything, so the faithful equivalent of the run's
    invalid-tool-call policy (retry, repair, skip, stop, ask) is the blocking resolution
    path: such a turn is fed with `model_response` instead — and therefore *without* a
    prior `record_streamed_completion_call`, which would make `model_response` a protocol
    violation. The run records exactly one completion call either way, and the history is
    the one the blocking path writes.
    """
    allowed = turn.allowed_tool_names
    if any(isinstance(item, ToolCall) and item.name not in allowed for item in turn.choice):
        return run.model_response(turn)
    run.record_streamed_completion_call(
        turn.usage,
        CompletionIdentity(turn.message_id, turn.response_id, turn.provider_request_id),
        turn.finish_reason,
        turn.raw,
    )
    run.streamed_turn(
        StreamedTurn(
            choice=turn.choice,
            executable_tool_names=turn.executable_tool_names,
            allowed_tool_names=allowed,
            message_id=turn.message_id,
            internal_call_ids=(),
            finish_reason=turn.finish_reason,
        )
    )
    return Continue(False)
