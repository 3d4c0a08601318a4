"""The run service: create, read, list, submit tool results, resolve, cancel.

Every operation validates first and then applies one atomic store transition, so a
refused request changes nothing. Each takes the caller's `tenant`: a run of another
tenant is exactly like a missing one (404), and a new run is the caller's (None: the
deployment's own view, as workers and sweeps see it; a run made so is the default
tenant's). The state machine (`app.core.AgentRun`) decides what a
run does with what arrives; the store decides who wins a race.
"""

from __future__ import annotations

import base64
import dataclasses
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from app import tracing
from app.clock import SYSTEM_CLOCK, Clock
from app.core import AgentRun, stored
from app.core.events import EventType as E
from app.core.lifecycle import INITIAL, RunStatus
from app.core.scope import Scope
from app.core.serde import SCHEMA_VERSION
from app.service import convert, lineage, recorded
from app.service.errors import IdempotencyKeyReused, InvalidRequest, RunNotFound, RunStateConflict
from app.service.fairness import fair_key, queue_spot
from app.service.initial import agent_settings, initial_run
from app.service.lineage import AGENT_KEY, CONVERSATION_KEY, PREVIOUS_KEY, TREE_KEY
from app.service.messages import Entry, page
from app.service.messages import decode_cursor as decode_message_cursor
from app.service.new_runs import Prepared, hooks_trimmed, run_id, without_unset_queues
from app.service.prices import PriceBook
from app.service.principals import DEFAULT_TENANT
from app.service.resolutions import resolution_change
from app.service.schemas import (
    InvalidToolCallPolicy,
    ResolutionIn,
    RunCreate,
    ToolResultsIn,
    output_schema_problem,
)
from app.service.submissions import SubmitOutcome
from app.service.tokens import callback_token, new_key
from app.service.tool_results import ToolResults
from app.settings import Settings
from app.store.changes import Change, Resolution
from app.store.hooks import Continuation, Continuations, Continuing, Creating
from app.store.run_records import NewEvent, RunRecord, SpawnedRun, ToolCallRecord
from app.store.runs import RunStore
from app.store.waiting import NEVER, Conversation

#: Builds a new run's state machine from its agent settings and turn budget (a fork's).
Begin = Callable[[Mapping[str, Any], int], AgentRun]


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as the API shows it: the record, its pending calls, its callback URL."""

    record: RunRecord
    pending: list[ToolCallRecord]
    callback_url: str | None
    resolution: Resolution | None  # the invalid tool call it waits to have resolved
    queue: dict[str, Any] | None = None  # a queued run's place (app.service.fairness)
    tree_usage: dict[str, Any] | None = None  # its usage with its descendants', on a read


def encode_cursor(record: RunRecord) -> str:
    raw = f"{record.created_at.isoformat()}|{record.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_RUN_ID = re.compile(r"[A-Za-z0-9_-]{1,40}")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, rid = raw.split("|", 1)
        when = datetime.fromisoformat(created)
        if when.tzinfo is None or not _RUN_ID.fullmatch(rid):
            raise ValueError(created)
        # In UTC, as stored: an offset that moves it past year 1 or 9999 is no run's time
        # (PostgreSQL's driver would refuse it with an error of its own).
        when = when.astimezone(UTC)
    except (ValueError, UnicodeDecodeError, OverflowError):
        raise InvalidRequest("cursor is malformed") from None
    return when, rid


class RunService:
    def __init__(
        self,
        store: RunStore,
        settings: Settings,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.store = store
        self.settings = settings
        self.clock = clock
        self._callback_key: str | None = None
        self.prices = PriceBook.for_settings(settings, clock)  # (a create's model's price)
        # (the service's clock as read at each call: a test may set `service.clock`)
        now = lambda: self.clock.now()  # noqa: E731
        self.results = ToolResults(store, now)

    async def callback_key(self) -> str:
        if self._callback_key is None:
            self._callback_key = await self.store.secret("callback_key", new_key)
        return self._callback_key

    # --- create -------------------------------------------------------------------------

    async def create_run(
        self,
        body: RunCreate,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        trace_parent: Mapping[str, str] | None = None,
        tenant: str = DEFAULT_TENANT,  # the new run's
        named: Mapping[str, Any] | None = None,
        marks: Mapping[str, Mapping[str, Any]] | None = None,
        begin: Begin | None = None,
        hashed: Mapping[str, Any] | None = None,
    ) -> tuple[RunView, bool]:
        """Create a run (or, for a known Idempotency-Key, answer with the stored one). Its
        trace starts here, as a child of `trace_parent` (the request's W3C headers) if that
        holds a context. `named` and `marks` as `prepare` takes them (a front end that
        builds the body from an agent itself: the open protocols; a fork's `begin`, `hashed`)."""
        with tracing.span(
            "agentrun.run.create",
            lambda: {"agentrun.actor": actor or ""},
            parent=trace_parent or {},
        ) as span:
            view, created = await self._create_run(
                body, idempotency_key, actor, tenant, named, marks, begin, hashed
            )
            tracing.set_attributes(span, lambda: tracing.create_attributes(view.record, created))
        return view, created

    async def _create_run(
        self,
        body: RunCreate,
        idempotency_key: str | None,
        actor: str | None,
        tenant: str,
        named: Mapping[str, Any] | None,
        marks: Mapping[str, Mapping[str, Any]] | None,
        begin: Begin | None,
        hashed: Mapping[str, Any] | None,
    ) -> tuple[RunView, bool]:
        new = await self.prepare(
            body,
            idempotency_key=idempotency_key,
            actor=actor,
            tenant=tenant,
            named=named,
            marks=marks,
            begin=begin,
            hashed=hashed,
        )
        values = new.values
        record, created = await self.store.create(
            dict(values), list(new.run.events), new.run.snapshot, new.now
        )
        if not created and record.request_hash != values["request_hash"]:
            raise IdempotencyKeyReused(
                "this Idempotency-Key was used for a different request body",
                run_id=record.id,
            )
        if (  # (the run waited for ended before the note: started now; read it again)
            new.continuing is not None
            and new.before is not None
            and await self._note_continued(new.continuing, new.before, record, replayed=not created)
        ):
            record = await self.store.get(record.id, scope=Scope.ALL) or record
        return await self.view(record), created

    async def prepare(
        self,
        body: RunCreate,
        *,
        idempotency_key: str | None = None,
        actor: str | None = None,
        tenant: str = DEFAULT_TENANT,
        tree: Mapping[str, Any] | None = None,
        named: Mapping[str, Any] | None = None,
        marks: Mapping[str, Mapping[str, Any]] | None = None,
        begin: Begin | None = None,
        hashed: Mapping[str, Any] | None = None,
    ) -> Prepared:
        """A new run as its create writes it, checked (a refusal raises) and not written:
        the create's, or a child run's (`tree`: its place, `app.store.trees`; `named`: the
        agent its body was made from), which the suspension that starts it writes in its
        own transaction. `marks`: configuration keys a feature sets on the run, shown in
        its `run.created` event too (a schedule's tick: `schedule`). `begin`: builds the
        run's state machine from its agent settings and turn budget instead of the body's
        prompt and history, and `hashed` is what an idempotency key's hash covers instead
        of the body (a fork: the body is made from the original run, which may change)."""
        # (hashed as the caller sent it; a fork's own request instead of the body it makes)
        request = hooks_trimmed(self.store, body) if hashed is None else dict(hashed)
        agent_ref = None if named is None else dict(named)  # (a child's, resolved already)
        if body.agent is not None:
            if body.previous_run_id is not None:
                raise InvalidRequest(
                    "agent: a run that continues another (previous_run_id) takes its "
                    "configuration from it; leave agent out"
                )
            if self.store.hooks.templates is None:
                raise InvalidRequest("agent: this deployment has no named agents")
            body, ref = await self.store.hooks.templates.body_of(body, tenant)
            agent_ref = dict(ref)
        before, continuing = None, None
        if body.previous_run_id is not None:  # (another tenant's run: not found)
            continuing = self._continuing(body, idempotency_key, actor, tenant)
            before = await self._continuations().continued(continuing)
        elif body.model is None:
            raise InvalidRequest("model is required unless previous_run_id names a run to continue")
        agent = agent_settings(body, before)
        if agent.get("output_schema") is None:  # (a run without one: configured as before)
            agent.pop("output_schema", None)
        elif problem := output_schema_problem(agent["output_schema"]):
            raise InvalidRequest(problem)
        names = [t["name"] for t in agent["tools"] or []]
        choice = convert.tool_choice_from_config(agent["tool_choice"])
        if choice is not None and choice.kind == "specific":
            unknown = [n for n in choice.function_names if n not in names]
            if unknown:
                raise InvalidRequest(f"tool_choice names a tool that is not defined: {unknown[0]}")
        policy = InvalidToolCallPolicy.model_validate(agent["invalid_tool_call"])
        bad_repairs = [t for t in policy.repair_to.values() if t not in names]
        if bad_repairs:
            raise InvalidRequest(
                f"invalid_tool_call.repair_to names an undefined tool: {bad_repairs[0]}"
            )
        limits = None if body.limits is None else body.limits.stored()
        if self.store.hooks.async_create_checks:  # (webhooks: the URL; limits: the price)
            models = self.store.hooks.models_of(agent)
            unpriced = {k: m for k, m in models.items() if self.prices.of_spec(m) is None}
            creating = Creating(agent, limits, unpriced, self.settings, tenant)
            for vet in self.store.hooks.async_create_checks:
                await vet(creating)
        max_turns = body.max_turns or self.settings.default_max_turns
        history = [convert.history_message(m) for m in body.history]
        if before is not None:
            history = [*before.history, *history]
        if begin is None:
            run = initial_run(body.prompt, history, max_turns, agent)
        else:
            run = begin(agent, max_turns)
        hooks = self.store.hooks
        for check in hooks.create_checks:  # (approvals: their policies)
            check(agent)
        if before is not None:  # what the body left out is inherited: part of the request
            request["fields_set"] = sorted(body.model_fields_set)
        now = self.clock.now()
        agent = hooks.trim(without_unset_queues(agent))
        config = {
            **agent,
            "tools": agent["tools"] or [],
            "expires_in": body.expires_in or self.settings.default_expires_in,
            "stream": body.stream,
        }
        created_data: dict[str, Any] = {"model": config["model"], "max_turns": max_turns}
        if before is not None:
            continued = {
                PREVIOUS_KEY: before.previous_id,
                CONVERSATION_KEY: before.conversation_id,
            }
            config.update(continued)
            created_data.update(continued)
        for key, place in ((AGENT_KEY, agent_ref), (TREE_KEY, tree), *(marks or {}).items()):
            if place is not None:  # (a named agent's run; a child run's place in its tree)
                config[key] = dict(place)
                created_data[key] = dict(place)
        if tracing.ENABLED:  # the create span's context: every later span joins it
            config[tracing.CONFIG_KEY] = tracing.carrier()
        new_id = run_id()
        conversation = before.conversation_id if before is not None else new_id
        values = {
            "id": new_id,
            "tenant_id": tenant,
            "priority": body.priority,
            "fair_key": fair_key(self.settings.fair_share_key, tenant, conversation, body.metadata),
            "status": INITIAL.value,
            "schema_version": SCHEMA_VERSION,
            "version": 1,
            "attempts": 0,
            "model_attempts": 0,
            "available_at": now,
            "idempotency_key": idempotency_key,
            # Only an idempotent create is compared with a later one (not stored
            # otherwise: every write of the run would carry it).
            "request_hash": convert.canonical_hash(request) if idempotency_key else None,
            "config": config,
            "metadata": body.metadata,
            "waiting_reason": None,  # (queued: `app.store.waiting.derived`)
            "turn": run.turn(),  # (0 but for a fork: its checkpoint's)
            "max_turns": max_turns,
            "limits": limits,
        }
        if limits:
            created_data["limits"] = limits
        if before is not None and before.waits_for is not None:  # not due until it ends
            reason = Conversation(before.waits_for)
            values["waiting_reason"] = reason.doc()
            values["available_at"] = now + NEVER
            created_data["waiting_reason"] = reason.doc()
        event = NewEvent(E.RUN_CREATED, created_data, actor)
        spawned = SpawnedRun(values, (event,), stored.initial(run))
        return Prepared(spawned, now, continuing, before)

    def _continuing(
        self, body: RunCreate, idempotency_key: str | None, actor: str | None, tenant: str
    ) -> Continuing:
        return Continuing(
            previous_id=body.previous_run_id or "",
            if_busy=body.if_busy,
            inherits_model="model" not in body.model_fields_set,
            idempotency_key=idempotency_key,
            actor=actor,
            tenant=tenant,
            now=lambda: self.clock.now(),  # (the service's clock as read at each call)
            cancel=self.cancel,
        )

    def _continuations(self) -> Continuations:
        """The store's `Continuations` (conversations); without one a create cannot
        continue a run."""
        if self.store.hooks.continuations is None:
            raise InvalidRequest("previous_run_id: this deployment does not continue runs")
        return self.store.hooks.continuations

    async def _note_continued(
        self, continuing: Continuing, before: Continuation, record: RunRecord, *, replayed: bool
    ) -> bool:
        """Tell `Continuations` of the new run after its commit (the `run.continued`
        note): the step a crash may skip, which the create's idempotent replay then takes.
        True when the new run was started meanwhile."""
        return await self._continuations().created(continuing, before, record, replayed=replayed)

    # --- read ---------------------------------------------------------------------------

    async def get_run(self, run_id: str, *, with_log: bool = False, scope: Scope) -> RunView:
        """A run as the API shows it (`with_log`: its record carries its log too)."""
        record = await self.store.get(run_id, with_log=with_log, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        view = await self.view(record)
        if record.status == RunStatus.QUEUED:
            spot = await queue_spot(self.store, record, self.clock.now())
            view = dataclasses.replace(view, queue=spot)
        if lineage.in_tree(record):  # (its spend with its descendants')
            view = dataclasses.replace(
                view, tree_usage=await self.store.trees.subtree_usage(record.id)
            )
        return view

    async def by_idempotency_key(self, key: str, *, scope: Scope) -> RunRecord | None:
        """The run a create with `Idempotency-Key: key` made in `scope` (a tenant's), if
        any (a front end that names its runs by a key of its own: AG-UI's threads)."""
        if scope.is_all:
            raise ValueError("idempotency keys are unique per tenant: name one")
        return await self.store.lookups.by_idempotency_key(key, scope=scope)

    async def load_run(self, run_id: str, *, scope: Scope) -> AgentRun:
        """A run's state machine as stored, with its whole conversation and its round's
        recorded answers applied (`app.service.recorded`)."""
        record = await self.store.get(run_id, with_log=True, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        return await recorded.loaded_run(self.store, record)

    async def messages(
        self, run_id: str, *, limit: int, cursor: str | None, scope: Scope
    ) -> tuple[list[Entry], str | None]:
        """A page of the run's conversation, oldest first (`app.service.messages`)."""
        if cursor:
            decode_message_cursor(cursor)  # a malformed cursor costs no read
        record = await self.store.get(run_id, with_log=True, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        return page(await recorded.loaded_run(self.store, record), limit, cursor)

    async def list_runs(
        self,
        *,
        status: RunStatus | None,
        limit: int,
        cursor: str | None,
        scope: Scope,
        root_run_id: str | None = None,
    ) -> tuple[list[RunView], str | None]:
        """Newest first; `root_run_id`: the runs of that tree only (its root too)."""
        before = decode_cursor(cursor) if cursor else None
        if root_run_id is not None:
            records = await self.store.trees.in_tree(
                root_run_id,
                limit=limit + 1,
                before=before,
                scope=scope,
                status=None if status is None else status.value,
            )
        else:
            records = await self.store.list_runs(
                status=status, limit=limit + 1, before=before, scope=scope
            )
        return await self.page(records, limit)

    async def children(
        self, run_id: str, *, limit: int, cursor: str | None, scope: Scope
    ) -> tuple[list[RunView], str | None]:
        """The child runs of a run in `scope` (its agent tools' calls), oldest first."""
        after = decode_cursor(cursor) if cursor else None
        await self.owned(run_id, scope)
        records = await self.store.trees.children(run_id, limit=limit + 1, after=after, scope=scope)
        return await self.page(records, limit)

    async def page(self, records: list[RunRecord], limit: int) -> tuple[list[RunView], str | None]:
        """A page of runs read `limit + 1` at a time: the views of the first `limit`, and
        the cursor after them if there were more."""
        more = len(records) > limit
        records = records[:limit]
        views = await self._views(records)
        return views, (encode_cursor(records[-1]) if more and records else None)

    async def events(
        self, run_id: str, after: int = 0, limit: int = 1000, *, scope: Scope
    ) -> list[Any]:
        if await self.store.get(run_id, scope=scope) is None:
            raise RunNotFound(f"no run with id {run_id}")
        return await self.store.events(run_id, after=after, limit=limit)

    async def view(self, record: RunRecord) -> RunView:
        """The API's view of a record the caller already holds (no re-read)."""
        return (await self._views([record]))[0]

    async def _views(self, records: list[RunRecord]) -> list[RunView]:
        """Views of many runs; pending calls come in one query for the whole page."""
        rounds = {r.id: n for r in records if (n := r.waiting_round) is not None}
        pending = await self.store.pending_calls(rounds)
        key = await self.callback_key() if rounds else ""
        views = []
        for r in records:
            callback_url = None
            if r.id in rounds:
                callback_url = self.settings.callback_url(callback_token(key, r.id, rounds[r.id]))
            resolution = r.waiting if isinstance(r.waiting, Resolution) else None
            if r.status != RunStatus.REQUIRES_ACTION:
                resolution = None
            views.append(RunView(r, pending.get(r.id, []), callback_url, resolution))
        return views

    # --- tool results -------------------------------------------------------------------

    async def submit_tool_results(
        self,
        body: ToolResultsIn,
        *,
        run_id: str | None = None,
        token: str | None = None,
        actor: str | None = None,
        scope: Scope,
    ) -> SubmitOutcome:
        """Results for a run by id (in `scope`) or by its callback token (whoever holds
        it: the token names one run and one suspension); `app.service.tool_results`."""
        return await self.results.submit(body, run_id=run_id, token=token, actor=actor, scope=scope)

    async def submit_by_callback(self, body: ToolResultsIn, token: str) -> SubmitOutcome:
        """Results by a run's callback token: the token is the capability (it names one
        run and one suspension), so its holder's read is not a tenant's."""
        return await self.submit_tool_results(body, token=token, actor="callback", scope=Scope.ALL)

    # --- resolution ---------------------------------------------------------------------

    async def resolve(
        self,
        run_id: str,
        body: ResolutionIn,
        *,
        actor: str | None = None,
        scope: Scope,
    ) -> RunView:
        started = tracing.start_time()
        record = await self.store.get(run_id, with_log=True, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        change = resolution_change(record, body, actor, self.clock.now())
        updated = await self._apply(run_id, change, scope)
        if updated is None:
            return await self._refused(run_id, "resolve", scope)
        tracing.record_span(
            "agentrun.run.resolve",
            updated.config,
            started,
            lambda: {
                **tracing.run_attributes(updated, actor),
                "agentrun.resolution.action": body.action,
            },
        )
        return await self.view(updated)

    # --- cancel -------------------------------------------------------------------------

    async def cancel(self, run_id: str, *, actor: str | None = None, scope: Scope) -> RunView:
        started = tracing.start_time()
        # (Scoped in the compare-and-set itself: another tenant's run is refused, then
        # reads as missing.) Its open descendants are cancelled in the same transaction.
        updated = await self.store.cancel_tree(run_id, actor, self.clock.now(), scope=scope)
        if updated is None:
            return await self._refused(run_id, "cancel", scope)
        tracing.record_span(
            "agentrun.run.cancel",
            updated.config,
            started,
            lambda: tracing.run_attributes(updated, actor),
        )
        return await self.view(updated)

    async def owned(self, run_id: str, scope: Scope) -> RunRecord:
        """The run, if it is in `scope`; else 404 as for a missing one."""
        record = await self.store.get(run_id, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        return record

    async def _apply(self, run_id: str, change: Change, scope: Scope) -> RunRecord | None:
        """Apply one change now (to a run in `scope`); None when refused (the run moved on,
        or is not there)."""
        updated, _ = await self.store.apply(run_id, change, self.clock.now(), scope=scope)
        return updated

    async def _refused(self, run_id: str, verb: str, scope: Scope) -> RunView:
        current = await self.store.get(run_id, scope=scope)
        if current is None:
            raise RunNotFound(f"no run with id {run_id}")
        raise RunStateConflict(
            f"cannot {verb} run {run_id}: it is {current.status.value}", current.status.value
        )
