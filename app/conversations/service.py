"""Conversations: a run that continues a finished one (or, by `if_busy`, a busy one).

A conversation is a chain of runs: each continuing run copies the whole conversation of
the run it continues into its own history (so it stands alone: the earlier run may be
deleted by retention later), records `previous_run_id` and `conversation_id` (the first
run's id) in its configuration (`app.service.lineage`), and the earlier run gets a
`run.continued` event naming it (so the dashboard links both ways without another
table). While the conversation's latest run is active a create refuses (`reject`), waits
for it (`enqueue`) or cancels it (`interrupt`): `app.conversations.busy`. Here: what a run
continues, a conversation's latest run, and the start of a run that waited for one.
"""

from __future__ import annotations

from datetime import datetime

from app.conversations.rows import ConversationRows
from app.core import stored
from app.core.lifecycle import TERMINAL, RunStatus
from app.core.scope import Scope
from app.service import recorded
from app.service.errors import RunNotFound, RunStateConflict
from app.service.initial import initial_run
from app.service.lineage import conversation_of
from app.store.hooks import Continuation
from app.store.run_records import RunRecord
from app.store.runs import RunStore
from app.store.waiting import NEVER, Conversation


async def continuation(
    store: RunStore, record: RunRecord | None, previous_id: str, *, ended: bool = False
) -> Continuation:
    """The continuation of `record` (read with its log); 404 when there is none, 409 with
    its status unless it completed (`ended`: unless it is active, for a run interrupted:
    its last durable conversation)."""
    if record is None:
        raise RunNotFound(f"no run with id {previous_id} (previous_run_id)")
    allowed = TERMINAL if ended else {RunStatus.COMPLETED}
    if record.status not in allowed:
        raise RunStateConflict(
            f"run {previous_id} is {record.status.value}: only a completed run can be continued",
            record.status.value,
        )
    run = await recorded.loaded_run(store, record)  # (answers recorded before it ended)
    return Continuation(record.id, conversation_of(record), run.full_history(), dict(record.config))


def waiting(record: RunRecord) -> Continuation:
    """The continuation of an active run by a run that waits for it (`if_busy`
    `enqueue`): its configuration now, its conversation once it ends (`restart`)."""
    return Continuation(
        record.id, conversation_of(record), (), dict(record.config), waits_for=record.id
    )


async def latest(
    store: RunStore, record: RunRecord, scope: Scope, idempotency_key: str | None = None
) -> tuple[RunRecord, bool]:
    """The latest run of `record`'s conversation from it on (in `scope`): follow the
    runs that continue it (a successor deleted by retention ends the chain; so does the
    run this create's `idempotency_key` already made: a replay continues as the first
    request did); and whether the chain ended at that run (a replay)."""
    seen = {record.id}
    while (after := await ConversationRows(store.backend).successor(record.id)) is not None:
        if after in seen:
            break
        following = await store.get(after, scope=scope)
        if following is None:
            break
        if idempotency_key is not None and following.idempotency_key == idempotency_key:
            return record, True
        seen.add(after)
        record = following
    return record, False


async def start_waiting(store: RunStore, ended: RunRecord, now: datetime) -> str | None:
    """Start the run that waits for `ended` (`awaited_by`, if it has ended): it continues
    from `ended`'s last durable conversation (its final one when it completed). Called
    with the record an ending write returned (the worker's, a cancel's, the expiry
    sweep's): a run nobody waits for costs nothing more; and by an enqueueing create
    whose note found the run ended already. The restart is a compare-and-set: two
    callers start it once. The id of the run started, or None."""
    if ended.status not in TERMINAL or ended.awaited_by is None:
        return None
    waiter = await store.get(ended.awaited_by, with_log=True, scope=Scope.ALL)
    if (
        waiter is None
        or waiter.status != RunStatus.QUEUED
        or waiter.waiting != Conversation(ended.id)
    ):
        return None
    before = await store.get(ended.id, with_log=True, scope=Scope.ALL)
    if before is None:
        return None
    own = stored.load(waiter.state, waiter.log).run
    new = own.messages()
    mine = own.full_history()[: len(own.full_history()) - len(new)]
    history = [*(await recorded.loaded_run(store, before)).full_history(), *mine]
    run = initial_run(new[0], history, waiter.max_turns, waiter.config)
    started = await ConversationRows(store.backend).restart(
        waiter.id, waiter.version, stored.initial(run), now
    )
    return waiter.id if started else None


async def start_orphans(store: RunStore, now: datetime) -> list[str]:
    """Start the parked runs whose awaited run has ended without starting them (its
    ender stopped between its ending write and `start_waiting`): the sweep behind the
    ending write's wake-up. The ids of the runs started."""
    started = []
    for _waiter, awaited in await ConversationRows(store.backend).parked(now + NEVER / 2):
        ended = await store.get(awaited, scope=Scope.ALL)
        if ended is not None:
            run_id = await start_waiting(store, ended, now)
            if run_id is not None:
                started.append(run_id)
    return started
