"""Conversations: a run that continues a finished one (or, by `if_busy`, a busy one), and
a run's conversation in pages.

A conversation is a chain of runs: each continuing run copies the whole conversation of
the run it continues into its own history (so it stands alone: the earlier run may be
deleted by retention later), records `previous_run_id` and `conversation_id` (the first
run's id) in its configuration, and the earlier run gets a `run.continued` event naming
it (so the dashboard links both ways without another table). While the conversation's
latest run is active a create refuses (`reject`), waits for it (`enqueue`) or cancels it
(`interrupt`): `BusyConversations`, which `RunService` composes.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from app.core import AgentRun, Message, stored
from app.core.events import EventType as E
from app.core.lifecycle import TERMINAL, RunStatus
from app.core.scope import Scope
from app.core.serde import message_to_dict
from app.service import convert, recorded
from app.service.errors import ConversationBusy, InvalidRequest, RunNotFound, RunStateConflict
from app.service.schemas import INHERITED, InvalidToolCallPolicy, RunCreate, inherited_model_problem
from app.store import changes
from app.store.changes import Change
from app.store.hooks import Sweep
from app.store.records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.store.waiting import Conversation

#: How far off a run waiting for its conversation is due: never, until it is started.
NEVER = timedelta(days=36500)

#: Configuration keys of a continuing run.
PREVIOUS_KEY = "previous_run_id"
CONVERSATION_KEY = "conversation_id"


@dataclass(frozen=True, slots=True)
class Continuation:
    """What a new run takes from the completed run it continues."""

    previous_id: str
    conversation_id: str
    history: tuple[Message, ...]
    config: Mapping[str, Any]


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
    return Continuation(record.id, conversation_of(record), (), dict(record.config))


async def latest(
    store: RunStore, record: RunRecord, scope: Scope, idempotency_key: str | None = None
) -> tuple[RunRecord, bool]:
    """The latest run of `record`'s conversation from it on (in `scope`): follow the
    runs that continue it (a successor deleted by retention ends the chain; so does the
    run this create's `idempotency_key` already made: a replay continues as the first
    request did); and whether the chain ended at that run (a replay)."""
    seen = {record.id}
    while (after := await store.conversations.successor(record.id)) is not None:
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


def retry_budget(policy: InvalidToolCallPolicy, max_turns: int) -> int:
    """The core's run-wide budget of invalid-call retries: `max_retries` under the `retry`
    policy; under `ask` every `retry` a person picks is honoured (each is a model call, so
    `max_turns` bounds them); no other policy retries."""
    if policy.action == "retry":
        return policy.max_retries
    return max_turns if policy.action == "ask" else 0


def initial_run(
    prompt: str | Message, history: Sequence[Message], max_turns: int, config: Mapping[str, Any]
) -> AgentRun:
    """A new run's state machine from its configuration (create, and `restart`)."""
    policy = InvalidToolCallPolicy.model_validate(config["invalid_tool_call"])
    return AgentRun(
        prompt,
        max_turns=max_turns,
        history=list(history) or None,
        tool_choice=convert.tool_choice_from_config(config["tool_choice"]),
        max_invalid_tool_call_retries=retry_budget(policy, max_turns),
    )


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
    started = await store.conversations.restart(waiter.id, waiter.version, stored.initial(run), now)
    return waiter.id if started else None


async def start_orphans(store: RunStore, now: datetime) -> list[str]:
    """Start the parked runs whose awaited run has ended without starting them (its
    ender stopped between its ending write and `start_waiting`): the sweep behind the
    ending write's wake-up. The ids of the runs started."""
    started = []
    for _waiter, awaited in await store.conversations.parked(now + NEVER / 2):
        ended = await store.get(awaited, scope=Scope.ALL)
        if ended is not None:
            run_id = await start_waiting(store, ended, now)
            if run_id is not None:
                started.append(run_id)
    return started


def conversation_of(record: RunRecord) -> str:
    """The id of the first run of `record`'s conversation (its own id if it continues none)."""
    value = record.config.get(CONVERSATION_KEY)
    return value if isinstance(value, str) else record.id


def previous_of(record: RunRecord) -> str | None:
    value = record.config.get(PREVIOUS_KEY)
    return value if isinstance(value, str) else None


def agent_settings(body: RunCreate, before: Continuation | None) -> dict[str, Any]:
    """The inherited fields (`INHERITED`) as the run's configuration stores them: the
    body's where it sets them (or there is no earlier run), else the earlier run's."""
    request = body.model_dump(mode="json", include=set(INHERITED))
    if before is None:
        return request
    return {
        name: request[name] if name in body.model_fields_set else before.config.get(name)
        for name in INHERITED
    }


# --- a continuing create, by `if_busy` ---------------------------------------------------------


class Cancel(Protocol):
    """`RunService.cancel`: a run cancelled as a client's cancel would (its waiter
    started, its span recorded); `RunStateConflict` when it has ended already."""

    async def __call__(self, run_id: str, *, actor: str | None, scope: Scope) -> object: ...


class BusyConversations:
    """What a create with `previous_run_id` continues, and the `run.continued` note on
    the earlier run; with `if_busy` when the conversation's latest run is active
    (`reject`: 409; `enqueue`: the new run waits for it; `interrupt`: it is cancelled)."""

    def __init__(self, store: RunStore, clock: Callable[[], datetime], cancel: Cancel) -> None:
        self.store = store
        self.clock = clock
        self.cancel = cancel

    async def continued(
        self, body: RunCreate, idempotency_key: str | None, actor: str | None, tenant: str
    ) -> tuple[Continuation, RunRecord | None]:
        """What a continuing run continues, by `if_busy` when the conversation's latest
        run is active; and the run it waits for (`enqueue`). An earlier run of an idle
        conversation may be continued (a branch); of a busy one, not (409 naming the
        latest: the strategies apply to the run that is active)."""
        previous_id, scope = body.previous_run_id or "", Scope.of(tenant)
        previous = await self.store.get(previous_id, with_log=True, scope=scope)
        if previous is None:
            raise RunNotFound(f"no run with id {previous_id} (previous_run_id)")
        inherited = "model" not in body.model_fields_set  # (checked before an interrupt)
        if inherited and (problem := inherited_model_problem(previous.config.get("model"))):
            raise InvalidRequest(problem)  # (its profile left the configuration, say)
        head, replay = await latest(self.store, previous, scope, idempotency_key)
        if head.status in TERMINAL:  # (its successors ended: the run named is the one)
            head = previous
        if head.status in TERMINAL:  # (a run before the latest: a branch, as ever; a
            # replay of an enqueue or interrupt whose run ended: the run it made answers)
            return await continuation(self.store, previous, previous_id, ended=replay), None
        if head.id != previous.id:
            raise ConversationBusy(
                f"run {previous_id} is not the latest of its conversation, and the latest, "
                f"{head.id}, is {head.status.value}: continue that one",
                previous.status.value,
                latest_run_id=head.id,
                active_run_id=head.id,
            )
        if body.if_busy == "reject":
            raise ConversationBusy(
                f"the conversation is busy: run {head.id} is {head.status.value} "
                "(if_busy: enqueue or interrupt)",
                head.status.value,
                active_run_id=head.id,
            )
        if body.if_busy == "enqueue":
            return waiting(head), head
        awaited = head.waiting.run_id if isinstance(head.waiting, Conversation) else None
        with contextlib.suppress(RunStateConflict):  # (it ended meanwhile: continue it)
            await self.cancel(head.id, actor=actor, scope=scope)
        if awaited is not None:  # (it never ran: this run waits in its place)
            target = await self.store.get(awaited, with_log=True, scope=scope)
            if target is not None and target.status not in TERMINAL:
                return waiting(target), target
            return await continuation(self.store, target, awaited, ended=True), None
        ended = await self.store.get(head.id, with_log=True, scope=scope)
        return await continuation(self.store, ended, head.id, ended=True), None

    async def note_continued(
        self,
        before: Continuation,
        record: RunRecord,
        actor: str | None,
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
        event = NewEvent(E.RUN_CONTINUED, data, actor)
        change = changes.awaited(event, record.id) if waits else changes.annotate(event)
        return await self._apply(before.previous_id, change)

    async def first_waiter_only(
        self,
        before: Continuation,
        record: RunRecord,
        actor: str | None,
        tenant: str,
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
        scope = Scope.of(tenant)
        first = None if rival is None else await self.store.get(rival, scope=scope)
        if (
            first is None
            or first.status != RunStatus.QUEUED
            or first.waiting != Conversation(before.previous_id)
        ):
            return await self.store.get(before.previous_id, scope=Scope.ALL)
        data = {"run_id": first.id, CONVERSATION_KEY: before.conversation_id}
        event = NewEvent(E.RUN_CONTINUED, data, actor)
        noted = await self._apply(before.previous_id, changes.awaited(event, first.id))
        with contextlib.suppress(RunStateConflict):
            await self.cancel(record.id, actor=actor, scope=scope)
        if noted is not None:  # (it ended meanwhile: the first starts now)
            await start_waiting(self.store, noted, self.clock())
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

    async def _apply(self, run_id: str, change: Change) -> RunRecord | None:
        updated, _ = await self.store.apply(run_id, change, self.clock(), scope=Scope.ALL)
        return updated


# --- a run's conversation, page by page -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    index: int  # position in the conversation, from 0
    from_history: bool  # given as history (or inherited from an earlier run), not this run's
    message: dict[str, Any]  # the `history` shape of POST /v1/runs


def encode_cursor(index: int) -> str:
    return base64.urlsafe_b64encode(f"m{index}".encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidRequest("cursor is malformed") from None
    digits = raw[1:]
    if raw[:1] != "m" or not (digits.isascii() and digits.isdigit()) or len(digits) > 10:
        raise InvalidRequest("cursor is malformed")
    return int(digits)


def page(run: AgentRun, limit: int, cursor: str | None) -> tuple[list[Entry], str | None]:
    """Up to `limit` messages of the run's conversation, oldest first, from `cursor`;
    and the cursor of the next page (None at the end)."""
    start = decode_cursor(cursor) if cursor else 0
    messages = run.full_history()
    given = len(messages) - len(run.messages())
    end = min(start + limit, len(messages))
    entries = [
        Entry(i, i < given, history_shape(message_to_dict(messages[i]))) for i in range(start, end)
    ]
    return entries, (encode_cursor(end) if end < len(messages) else None)


def history_shape(doc: dict[str, Any]) -> dict[str, Any]:
    """A stored message as `history` accepts it: role, content and (assistant) id."""
    out = {"role": doc["role"], "content": doc["content"]}
    if doc["role"] == "assistant":
        out["id"] = doc.get("id")
    return out


#: How often a worker looks for runs parked for a conversation whose awaited run ended
#: without starting them (a process killed between the ending write and its hook).
ORPHAN_SWEEP_SECONDS = 30.0


def install(store: RunStore) -> None:
    """Plug conversations into `store`: a run's end starts the run waiting for it
    (`if_busy: enqueue`), whoever ended it; `start_orphans` is the sweep behind it."""

    async def ended(record: RunRecord, now: datetime) -> None:
        if record.awaited_by is not None:  # (a run nobody waits for costs nothing more)
            await start_waiting(store, record, now)

    async def orphans(now: datetime) -> list[str]:
        return await start_orphans(store, now)

    store.hooks.on_run_ended(ended)
    store.hooks.add_sweep(
        Sweep("started runs waiting for an ended run", orphans, ORPHAN_SWEEP_SECONDS)
    )
