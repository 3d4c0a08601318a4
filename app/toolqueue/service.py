"""The tool-call queue, as the API serves it: executors without a public address lease the
pending calls of runs that name their queue, extend the lease while a tool runs, and answer
through the lease.

A lease request long-polls: it looks once and, finding nothing, sleeps until the queue's
bell rings (a commit offered calls of the queue: NOTIFY on PostgreSQL), until the next
lease it saw would lapse, or a fallback poll comes due (the poll interval on SQLite),
holding no database connection meanwhile. Delivery is at least once: a lease that lapses
(its executor died or stalled) is taken by the next lease request, each time with a new
token. A result is submitted through the normal submission path
(`app.service.submissions.decide`, one compare-and-set on the run's version, which every
lease moves on), so a run resumes exactly as when its results come by API key; it is
refused when another lease holds the call, and accepted as a no-op when the call already
has that very result.

A token is signed (`app.service.tokens.lease_signature`): one this service never issued is
refused as not found (404), one it issued whose lease moved on as lost (409). Unsigned
tokens, as releases before the signature handed out, are good while they hold the call.

A queue is a tenant's (the caller's): its leases, heartbeats and results reach the calls
of that tenant's runs only; a token of another tenant's lease is not found (404).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from app import metrics, tracing
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import convert
from app.service.errors import (
    LeaseLost,
    LeaseNotFound,
    RunStateConflict,
    ToolResultConflict,
)
from app.service.live import EventHub, QueueBell
from app.service.principals import DEFAULT_TENANT
from app.service.runs import RunService
from app.service.schemas import HeartbeatIn, LeasedResultIn, LeaseIn
from app.service.shielded import whole
from app.service.submissions import SUBMIT_ATTEMPTS, SubmitOutcome, SubmittedResult, decide
from app.service.tokens import lease_signature
from app.store.backend.leases import bell_of
from app.store.errors import NotFoundError
from app.store.run_records import ToolCallRecord
from app.toolqueue.sql import ToolCallQueue

#: A lease token: the call (run, round, position), the lease's own random part and the
#: service's signature of them (absent from tokens of earlier releases).
_TOKEN = re.compile(
    r"^(?P<run>[A-Za-z0-9_-]{1,40})-(?P<round>\d{1,9})-(?P<pos>\d{1,9})-(?P<nonce>[0-9a-f]{32})"
    r"(?:-(?P<sig>[0-9a-f]{32}))?$"
)
#: Between two looks at a queue that has calls nobody could lease just now (their rows
#: were locked by a concurrent lease or transition), at least this long.
MIN_PAUSE_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Lease:
    run_id: str
    round: int
    position: int
    nonce: str
    signature: str | None = None

    @property
    def token(self) -> str:
        base = f"{self.run_id}-{self.round}-{self.position}-{self.nonce}"
        return base if self.signature is None else f"{base}-{self.signature}"

    @classmethod
    def of(cls, call: ToolCallRecord, key: str) -> Lease:
        assert call.lease_token is not None and call.queue is not None
        lease = cls(call.run_id, call.round, call.position, call.lease_token)
        return dataclasses.replace(lease, signature=lease.signed(key, call.queue))

    def signed(self, key: str, queue: str) -> str:
        return lease_signature(key, queue, self.run_id, self.round, self.position, self.nonce)

    @classmethod
    def parse(cls, token: str) -> Lease:
        m = _TOKEN.match(token)
        if m is None:
            raise LeaseNotFound("this lease token is malformed")
        return cls(m["run"], int(m["round"]), int(m["pos"]), m["nonce"], m["sig"])


class QueueService:
    def __init__(
        self,
        service: RunService,
        hub: EventHub | None = None,
        *,
        fallback_seconds: float | None = None,
    ) -> None:
        self.service = service
        self.store = service.store
        self.calls = ToolCallQueue(service.store.backend)  # (this feature's SQL)
        self.clock = service.clock
        self.hub = hub  # its LISTEN connection rings the bell (started at the first lease)
        self._bell = hub.bell if hub is not None else QueueBell()
        # A wait that heard nothing looks again after this: NOTIFY may be missed (a
        # LISTEN connection re-established), and SQLite has none.
        if fallback_seconds is None:
            fallback_seconds = 5.0 if self.store.notifies else service.settings.poll_interval
        self.fallback_seconds = fallback_seconds
        self._key: str | None = None  # signs lease tokens (the callback key), read at first use

    async def key(self) -> str:
        if self._key is None:
            self._key = await self.service.callback_key()
        return self._key

    def token(self, call: ToolCallRecord) -> str:
        """The token of a call this service leased (its key was read by the lease)."""
        assert self._key is not None, "a token is made for a leased call"
        return Lease.of(call, self._key).token

    async def _parse(self, queue: str, token: str) -> tuple[Lease, bool]:
        """The lease a token names, and whether it carries this service's signature; a
        token signed otherwise was never issued (`LeaseNotFound`)."""
        lease = Lease.parse(token)
        if lease.signature is None:
            return lease, False
        if not hmac.compare_digest(lease.signature, lease.signed(await self.key(), queue)):
            raise LeaseNotFound(f"no lease {token} in queue {queue}")
        return lease, True

    # --- lease ----------------------------------------------------------------------------

    async def lease(
        self, queue: str, body: LeaseIn, actor: str | None, tenant: str = DEFAULT_TENANT
    ) -> list[ToolCallRecord]:
        """Up to `body.limit` calls of `tenant`'s `queue`, leased for `body.lease_seconds`;
        waits up to `body.wait` seconds for one when none is leasable (empty: none came)."""
        deadline = self.clock.monotonic() + body.wait
        owner = body.executor or actor or "executor"
        await self.key()  # (for the tokens of what it leases)
        bell, name = self.bell, bell_of(tenant, queue)
        limited = self.service.settings.max_in_flight(queue)
        while True:
            ring = bell.listen(name)  # before looking: a ring meanwhile is kept
            try:
                now = self.clock.now()
                until = now + timedelta(seconds=body.lease_seconds)
                calls = await whole(
                    self.calls.lease_calls(queue, owner, now, until, body.limit, tenant, limited)
                )
                metrics.tool_calls_leased(queue, [c.attempts for c in calls])
                remaining = deadline - self.clock.monotonic()
                if calls or remaining <= 0 or bell.released:
                    return calls
                pause = min(remaining, self.fallback_seconds)
                # (A limited queue may have due calls it may not hand out: not a reason to
                # look again at once; its bell or the fallback brings it back.)
                due = None if limited else await whole(self.calls.next_offer(queue, tenant))
                if due is not None:  # a lease lapses then (or a call is due but was busy)
                    until_due = (due - self.clock.now()).total_seconds()
                    pause = min(pause, max(until_due, MIN_PAUSE_SECONDS))
                with contextlib.suppress(TimeoutError):  # (not wait_for: app.worker.worker)
                    async with asyncio.timeout(pause):
                        await asyncio.shield(ring)
            finally:
                bell.forget(name, ring)

    @property
    def bell(self) -> QueueBell:
        return self.hub.queue_bell() if self.hub is not None else self._bell

    # --- heartbeat ------------------------------------------------------------------------

    async def heartbeat(
        self, queue: str, token: str, body: HeartbeatIn, tenant: str = DEFAULT_TENANT
    ) -> datetime:
        """Extend a lease by `body.lease_seconds` from now; the new expiry. Refused
        (`LeaseLost`) once the lease moved on; a lease that lapsed but that nobody took
        since is extended."""
        lease, issued = await self._parse(queue, token)
        until = self.clock.now() + timedelta(seconds=body.lease_seconds)
        extended = await self.calls.extend_lease(
            lease.run_id, lease.round, lease.position, lease.nonce, queue, until, tenant
        )
        if extended is not None:
            return extended
        row = await self.calls.call_row(lease.run_id, lease.round, lease.position, Scope.of(tenant))
        if row is None or (row.queue is not None and row.queue != queue):
            raise LeaseNotFound(f"no lease {token} in queue {queue}")
        if not (issued or row.lease_token == lease.nonce):
            raise LeaseNotFound(f"no lease {token} in queue {queue}")
        metrics.tool_call_lease_lost(queue)
        raise LeaseLost(lost_reason(row), tool_call_id=row.call_id)

    # --- results --------------------------------------------------------------------------

    async def submit(
        self,
        queue: str,
        token: str,
        body: LeasedResultIn,
        actor: str | None,
        tenant: str = DEFAULT_TENANT,
    ) -> SubmitOutcome:
        """Answer the leased call (the normal submission path: the run resumes when this
        was its last open call)."""
        lease, issued = await self._parse(queue, token)
        result = {"output": body.output, "is_error": body.is_error}
        submitted = SubmittedResult(
            "", result, convert.canonical_hash(result), actor, position=lease.position
        )
        started = tracing.start_time()
        for _ in range(SUBMIT_ATTEMPTS):
            try:
                pending = await self.store.pending(run_id=lease.run_id, scope=Scope.of(tenant))
            except NotFoundError:
                raise LeaseNotFound(f"no lease {token} in queue {queue}") from None
            record = pending.record
            current = record.waiting_round == lease.round
            row = (
                next((c for c in pending.calls if c.position == lease.position), None)
                if current
                else await self.calls.call_row(
                    lease.run_id, lease.round, lease.position, Scope.of(tenant)
                )
            )
            if row is None or not (issued or row.lease_token == lease.nonce):
                raise LeaseNotFound(f"no lease {token} in queue {queue}")
            if row.result_hash is not None:
                if row.result_hash == submitted.result_hash:
                    return SubmitOutcome(record, [], False)  # the same answer: a retry
                raise ToolResultConflict(
                    f"tool call {row.call_id!r} already has a different result",
                    tool_call_id=row.call_id,
                )
            if not current:
                raise RunStateConflict(
                    f"run {record.id} is {record.status.value}, not waiting for this tool call",
                    record.status.value,
                )
            if row.queue != queue:
                raise LeaseNotFound(f"no lease {token} in queue {queue}")
            if row.lease_token != lease.nonce:
                metrics.tool_call_lease_lost(queue)
                raise LeaseLost(lost_reason(row), tool_call_id=row.call_id)
            now = self.clock.now()
            mine = dataclasses.replace(submitted, call_id=row.call_id)
            change = decide(record, pending.calls, [mine], now)
            if change is None:  # (answered identically meanwhile)
                return SubmitOutcome(record, [], False)
            updated, _ = await self.store.apply(record.id, change, now, scope=Scope.ALL)
            if updated is not None:  # else a lease or a submission moved the run on: again
                outcome = SubmitOutcome(updated, [row.call_id], change.status == RunStatus.QUEUED)
                _traced(outcome, started, actor, queue)
                return outcome
        raise RunStateConflict(f"run {lease.run_id} kept changing; try again", record.status.value)


def lost_reason(row: ToolCallRecord) -> str:
    if row.result_hash is not None:
        return f"tool call {row.call_id!r} was answered"
    if row.queue is None:
        return f"tool call {row.call_id!r} is no longer pending (its run stopped waiting)"
    return f"tool call {row.call_id!r} was leased again (lease {row.attempts}) after yours lapsed"


def _traced(outcome: SubmitOutcome, started: Any, actor: str | None, queue: str) -> None:
    tracing.record_span(
        "agentrun.run.submit_tool_results",
        outcome.record.config,
        started,
        lambda: {
            **tracing.run_attributes(outcome.record, actor),
            "agentrun.tool_results.submitted": 1,
            "agentrun.tool_results.accepted": len(outcome.accepted),
            "agentrun.run.resumed": outcome.resumed,
            "agentrun.tool_queue": queue,
        },
    )
