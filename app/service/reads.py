"""What the API and the dashboard read, through the service layer.

They never touch the store or its engine: health, usage, metrics and the dashboard's
pages come from here, which calls the store's public reads and its report queries
(`app.store.reports`). Writes stay in `RunService` and `app.service.operator_actions`. The reads
of runs take a `tenant` (its runs only; None: every tenant's, for the deployment's own
views such as /metrics).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
import sqlalchemy as sa

from app.core import AgentRun
from app.core.lifecycle import RunStatus
from app.core.scope import Scope
from app.service import recorded
from app.service.tokens import new_key
from app.service.types import (
    Activity,
    EventRecord,
    Gauges,
    QueueDepth,
    RunFilter,
    RunRecord,
    ToolCallRecord,
)
from app.store import gauges, reports, run_pages, samples, spend
from app.store.runs import RunStore


@dataclass(frozen=True, slots=True)
class Overview:
    """The dashboard's overview: runs by status, suspended ages, last-hour activity."""

    counts: dict[str, int]
    suspended_ages: list[float]  # seconds each suspended run has waited
    age_histogram: list[tuple[str, int]]
    activity: Activity


#: `(a run's id) -> its webhook deliveries` (the webhooks feature's outbox).
Deliveries = Callable[[str], Awaitable[list[dict[str, Any]]]]


class RunReads:
    def __init__(self, store: RunStore, *, deliveries: Deliveries | None = None) -> None:
        self.store = store
        #: Where a run's webhook deliveries are read, handed in by the composition root
        #: (None: the deployment lists none; the dashboard shows no such section).
        self.deliveries_of = deliveries

    async def ready(self) -> None:
        """Return when the database answers a query; raise whatever reaching it raised."""
        async with self.store.engine.connect() as conn:
            await conn.execute(sa.text("SELECT 1"))

    async def shared_secret(self, name: str) -> str:
        """A service-wide secret every process shares (made by the first to ask)."""
        return await self.store.secret(name, new_key)

    async def run(self, run_id: str, scope: Scope) -> RunRecord | None:
        return await self.store.get(run_id, scope=scope)

    async def events(self, run_id: str, *, after: int = 0, limit: int = 1000) -> list[EventRecord]:
        return await self.store.events(run_id, after=after, limit=limit)

    async def count_by_status(self, scope: Scope) -> dict[str, int]:
        """Stored runs by status, from indexes and a rollup (never a count of `runs`)."""
        return await reports.count_by_status(self.store.engine, scope)

    async def queue_depth(self, now: datetime) -> int:
        """Queued runs that are due now (the claim index)."""
        return await reports.queue_depth(self.store.engine, now)

    async def suspended_ages(self, now: datetime, scope: Scope) -> list[float]:
        """Seconds each suspended run has waited (read by the suspended status's index)."""
        return await reports.suspended_ages(self.store.engine, now, scope)

    async def usage(self, start: datetime, end: datetime, scope: Scope) -> dict[str, Any]:
        """The usage ledger's sums in [start, end): overall, by run status, by model."""
        return await self.store.usage_totals(start, end, scope)

    async def gauges(self, now: datetime, age_edges: Sequence[float]) -> Gauges:
        """What /metrics reads from the database (each from an index; runs by status come
        from `count_by_status`, tool-call queues from `queue_depths`)."""
        return await gauges.read(self.store.engine, now, age_edges)

    async def feature_gauges(self, now: datetime) -> list[object]:
        """The features' gauges (`Hooks.gauges`: metric families), in their order."""
        families: list[object] = []
        for reader in self.store.hooks.gauges:
            families.extend(await reader(now))
        return families

    async def queue_depths(self, now: datetime) -> list[QueueDepth]:
        """Per tool-call queue: calls waiting for a lease, calls under a live lease."""
        return await gauges.queue_depths(self.store.engine, now)

    # --- the dashboard ------------------------------------------------------------------

    async def runs_page(
        self, f: RunFilter, *, limit: int, cursor: str | None
    ) -> tuple[list[RunRecord], str | None]:
        """One page of runs matching `f` and the cursor of the next (raises `BadCursor`)."""
        return await run_pages.page_of_runs(self.store.engine, f, limit=limit, cursor=cursor)

    async def pending_calls(self, records: Iterable[RunRecord]) -> dict[str, list[ToolCallRecord]]:
        """The tool calls each run waits on (none for a run that waits on nothing), in one
        query for all of them."""
        rounds = {r.id: n for r in records if (n := r.waiting_round) is not None}
        return await self.store.pending_calls(rounds)

    async def run_of(self, record: RunRecord) -> AgentRun:
        """The state machine of `record` (read with its log), its round's recorded answers
        applied (`app.service.recorded`): the conversation as the API shows it."""
        return await recorded.loaded_run(self.store, record)

    async def prompts(self, records: Iterable[RunRecord]) -> dict[str, str]:
        """Each run's prompt as one line of text (`prompt_text`), in one query for all of
        them (a run stored before its log was kept apart has none)."""
        found = await run_pages.prompts(self.store.engine, [r.id for r in records])
        return {run_id: text for run_id, raw in found.items() if (text := prompt_text(raw))}

    async def suspended_since(self, records: Iterable[RunRecord]) -> dict[str, datetime]:
        """When each suspended run among `records` last suspended."""
        ids = [r.id for r in records if r.status == RunStatus.REQUIRES_ACTION]
        return await reports.suspended_since(self.store.engine, ids)

    async def deliveries(self, run_id: str) -> list[dict[str, Any]] | None:
        """The run's webhook deliveries with their latest outcome (None: none are listed)."""
        return None if self.deliveries_of is None else await self.deliveries_of(run_id)

    async def ledger(self, run_id: str) -> dict[str, Any]:
        """The run's usage-ledger totals: calls, failed calls, cost."""
        return await reports.run_ledger(self.store.engine, run_id)

    async def overview(self, now: datetime, scope: Scope) -> Overview:
        """The dashboard's overview of the runs in `scope`."""
        counts = await self.count_by_status(scope)
        ages = await self.suspended_ages(now, scope)
        return Overview(
            counts=counts,
            suspended_ages=ages,
            age_histogram=reports.age_histogram(ages),
            activity=await reports.activity(self.store.engine, now, scope),
        )

    async def spend_of(
        self, start: datetime, end: datetime, scope: Scope, *, agents: bool = True
    ) -> spend.Ledger:
        """Usage per hour, tenant, provider, model and agent (all '' unless `agents`),
        and answered calls per latency bucket, in [start, end) (`start` a whole UTC
        hour): the overview's."""
        window = spend.Window(start, end, agents=agents)
        return await spend.read(self.store.engine, window, scope)

    async def waiting_over(
        self, start: datetime, end: datetime, scope: Scope
    ) -> list[samples.Sample]:
        """What was waiting per tenant and minute in [start, end), oldest first."""
        return await samples.samples(self.store.engine, start, end, scope)


def prompt_text(raw: str) -> str:
    """A stored prompt message (its JSON text) as one line: its text parts, whitespace
    folded; an image or a tool result is named in brackets. Any shape an older schema
    version stored reads as what text it holds, never an error."""
    try:
        message = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return ""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return " ".join(content.split())
    parts: list[str] = []
    for item in content if isinstance(content, list) else ():
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "text" and isinstance(item.get("text"), str):
            parts.append(item["text"])
        elif kind == "image":
            parts.append("[image]")
        elif kind == "toolresult":
            parts.append(f"[result of {item.get('name')}]")
    return " ".join(" ".join(parts).split())
