"""Conversations, a feature: runs that continue others (`previous_run_id`), busy
conversations (`if_busy`), and the runs that wait for an active one to end. The kernel
knows none of it: `install` plugs it into the store's extension points
(`app.store.hooks`)."""

from __future__ import annotations

from datetime import datetime

from app.conversations.busy import BusyConversations
from app.conversations.service import latest, start_orphans, start_waiting
from app.core.lifecycle import TERMINAL
from app.core.scope import Scope
from app.service.errors import ConversationBusy
from app.store.hooks import Sweep
from app.store.run_records import RunRecord
from app.store.runs import RunStore

#: How often a worker looks for runs parked for a conversation whose awaited run ended
#: without starting them (a process killed between the ending write and its hook).
ORPHAN_SWEEP_SECONDS = 30.0


def install(store: RunStore) -> None:
    """Plug conversations into `store`: a create with `previous_run_id` continues a run
    (`BusyConversations`); a run's end starts the run waiting for it (`if_busy:
    enqueue`), whoever ended it, and `start_orphans` is the sweep behind it; an operator's
    retry of a run its conversation went on from is refused while the later run is active."""

    async def ended(record: RunRecord, now: datetime) -> None:
        if record.awaited_by is not None:  # (a run nobody waits for costs nothing more)
            await start_waiting(store, record, now)

    async def orphans(now: datetime) -> list[str]:
        return await start_orphans(store, now)

    async def may_reopen(record: RunRecord, scope: Scope) -> None:
        head, _ = await latest(store, record, scope)
        if head.id != record.id and head.status not in TERMINAL:  # (a run went on from it)
            raise ConversationBusy(
                f"cannot retry run {record.id}: run {head.id} continues its conversation and "
                f"is {head.status.value}",
                record.status.value,
                latest_run_id=head.id,
                active_run_id=head.id,
            )

    store.hooks.continue_with(BusyConversations(store))
    store.hooks.on_run_ended(ended)
    store.hooks.add_sweep(
        Sweep("started runs waiting for an ended run", orphans, ORPHAN_SWEEP_SECONDS)
    )
    store.hooks.on_may_reopen(may_reopen)
