"""Busy conversations: a create with `previous_run_id` (`Continuations`, which the kernel's
create asks), by `if_busy` when the conversation's latest run is still active (`reject`:
409; `enqueue`: the new run waits for it; `interrupt`: it is cancelled), and the
`run.continued` note on the earlier run after the new run's commit."""

from __future__ import annotations

import contextlib
from datetime import datetime

from app.conversations.service import continuation, latest, start_waiting, waiting
from app.core.events import EventType as E
from app.core.lifecycle import TERMINAL, RunStatus
from app.core.scope import Scope
from app.service.errors import ConversationBusy, InvalidRequest, RunNotFound, RunStateConflict
from app.service.lineage import CONVERSATION_KEY
from app.service.schemas import inherited_model_problem
from app.store import changes
from app.store.changes import Change
from app.store.hooks import Continuation, Continuing
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.store.waiting import Conversation


class BusyConversations:
    """What a create with `previous_run_id` continues, and the `run.continued` note on
    the earlier run; with `if_busy` when the conversation's latest run is active
    (`reject`: 409; `enqueue`: the new run waits for it; `interrupt`: it is cancelled)."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    async def continued(self, create: Continuing) -> Continuation:
        """What a continuing run continues, by `if_busy` when the conversation's latest
        run is active; and the run it waits for (`enqueue`). An earlier run of an idle
        conversation may be continued (a branch); of a busy one, not (409 naming the
        latest: the strategies apply to the run that is active)."""
        previous_id, scope = create.previous_id, Scope.of(create.tenant)
        previous = await self.store.get(previous_id, with_log=True, scope=scope)
        if previous is None:
            raise RunNotFound(f"no run with id {previous_id} (previous_run_id)")
        inherited = create.inherits_model  # (checked before an interrupt)
        if inherited and (problem := inherited_model_problem(previous.config.get("model"))):
            raise InvalidRequest(problem)  # (its profile left the configuration, say)
        head, replay = await latest(self.store, previous, scope, create.idempotency_key)
        if head.status in TERMINAL:  # (its successors ended: the run named is the one)
            head = previous
        if head.status in TERMINAL:  # (a run before the latest: a branch, as ever; a
            # replay of an enqueue or interrupt whose run ended: the run it made answers)
            return await continuation(self.store, previous, previous_id, ended=replay)
        if head.id != previous.id:
            raise ConversationBusy(
                f"run {previous_id} is not the latest of its conversation, and the latest, "
                f"{head.id}, is {head.status.value}: continue that one",
                previous.status.value,
                latest_run_id=head.id,
                active_run_id=head.id,
            )
        if create.if_busy == "reject":
            raise ConversationBusy(
                f"the conversation is busy: run {head.id} is {head.status.value} "
                "(if_busy: enqueue or interrupt)",
                head.status.value,
                active_run_id=head.id,
            )
        if create.if_busy == "enqueue":
            return waiting(head)
        awaited = head.waiting.run_id if isinstance(head.waiting, Conversation) else None
        with contextlib.suppress(RunStateConflict):  # (it ended meanwhile: continue it)
            await create.cancel(head.id, actor=create.actor, scope=scope)
        if awaited is not None:  # (it never ran: this run waits in its place)
            target = await self.store.get(awaited, with_log=True, scope=scope)
            if target is not None and target.status not in TERMINAL:
                return waiting(target)
            return await continuation(self.store, target, awaited, ended=True)
        ended = await self.store.get(head.id, with_log=True, scope=scope)
        return await continuation(self.store, ended, head.id, ended=True)

    async def created(
        self, create: Continuing, before: Continuation, record: RunRecord, *, replayed: bool
    ) -> bool:
        """The `run.continued` note after the new run's commit (a replay's too: a create
        that died before it is noted then); a waiting run (`enqueue`) keeps the active
        run's waiter slot only if it was first, and starts now if that run ended before
        the note (its ending write did not see it). True when it was started."""
        waits = before.waits_for is not None
        noted = await self.note_continued(before, record, create, replayed=replayed, waits=waits)
        if waits and not replayed and noted is not None:
            noted = await self.first_waiter_only(before, record, create)
        if noted is None:
            return False
        return await start_waiting(self.store, noted, create.now()) is not None

    async def note_continued(
        self,
        before: Continuation,
        record: RunRecord,
        create: Continuing,
        *,
        replayed: bool,
        waits: bool = False,
    ) -> RunRecord | None:
        """`run.continued` on the earlier run, naming the new one (`waits`: which waits
        for it to end, `awaited_by`); the earlier run as noted. Written after the new
        run's commit: a create that died in between is noted by its idempotent replay."""
        if replayed and await self._continued_noted(before.previous_id, record.id):
            return await self.store.get(before.previous_id, scope=Scope.ALL) if waits else None
        data = {"run_id": record.id, CONVERSATION_KEY: before.conversation_id}
        event = NewEvent(E.RUN_CONTINUED, data, create.actor)
        change = changes.awaited(event, record.id) if waits else changes.annotate(event)
        return await self._apply(before.previous_id, change, create.now())

    async def first_waiter_only(
        self,
        before: Continuation,
        record: RunRecord,
        create: Continuing,
    ) -> RunRecord | None:
        """An enqueue that read the conversation before another's note (two at once): the
        first noted keeps the active run's waiter slot (`awaited_by`, which this note
        took), this run is cancelled and the create is a 409 naming the first, as it is
        when the requests come one after the other. Only notes before this one count, so
        of two creates at once one wins. The active run as noted, when this run stays."""
        rival = None
        after, mine = 0, False
        while not mine and (events := await self.store.events(before.previous_id, after=after)):
            for e in events:
                if e.type != E.RUN_CONTINUED:
                    continue
                named = e.data.get("run_id")
                if named == record.id:
                    mine = True
                    break
                if isinstance(named, str):
                    rival = named
            after = events[-1].seq
        scope = Scope.of(create.tenant)
        first = None if rival is None else await self.store.get(rival, scope=scope)
        if (
            first is None
            or first.status != RunStatus.QUEUED
            or first.waiting != Conversation(before.previous_id)
        ):
            return await self.store.get(before.previous_id, scope=Scope.ALL)
        data = {"run_id": first.id, CONVERSATION_KEY: before.conversation_id}
        event = NewEvent(E.RUN_CONTINUED, data, create.actor)
        noted = await self._apply(
            before.previous_id, changes.awaited(event, first.id), create.now()
        )
        with contextlib.suppress(RunStateConflict):
            await create.cancel(record.id, actor=create.actor, scope=scope)
        if noted is not None:  # (it ended meanwhile: the first starts now)
            await start_waiting(self.store, noted, create.now())
        raise ConversationBusy(
            f"run {before.previous_id} is not the latest of its conversation: run "
            f"{first.id} waits for it (if_busy: enqueue); continue that one",
            first.status.value,
            latest_run_id=first.id,
            active_run_id=first.id,
        )

    async def _continued_noted(self, previous_id: str, run_id: str) -> bool:
        after = 0
        while True:
            events = await self.store.events(previous_id, after=after)
            if not events:
                return False
            if any(e.type == E.RUN_CONTINUED and e.data.get("run_id") == run_id for e in events):
                return True
            after = events[-1].seq

    async def _apply(self, run_id: str, change: Change, now: datetime) -> RunRecord | None:
        updated, _ = await self.store.apply(run_id, change, now, scope=Scope.ALL)
        return updated
