"""The forks' operations: a run's checkpoints, and a new run forked from one.

A fork is a create (`RunService.create_run`) whose configuration is the original's with
the request's overrides, whose state machine starts from the checkpoint's conversation
(`app.forks.plan`), and whose `forked_from` mark names the run and the checkpoint: it is
the original's tenant's run, checked and counted as any new run (limits, budgets,
idempotency keys). Nothing of the original is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from app.core import AgentRun
from app.core.events import EventType as E
from app.core.scope import Scope
from app.forks.checkpoints import Checkpoint, call_owners, calls_of, list_checkpoints, turn_at
from app.forks.plan import SplitCall, begin, patched
from app.forks.specs import ForkIn
from app.service import recorded
from app.service.errors import ForkSplit, InvalidRequest, RunNotFound
from app.service.lineage import FORK_KEY
from app.service.runs import RunService, RunView, decode_cursor
from app.service.schemas import INHERITED, RunCreate
from app.store.run_records import RunRecord
from app.store.trees import linked_runs

#: The run's own fields a fork takes from it, besides the inherited configuration.
OWN = ("expires_in", "stream")


@dataclass(frozen=True, slots=True)
class Checkpoints:
    run_id: str
    data: list[Checkpoint]
    messages: int  # in the run's conversation now


class ForkService:
    def __init__(self, runs: RunService) -> None:
        self.runs = runs
        self.store = runs.store

    async def _loaded(self, run_id: str, scope: Scope) -> tuple[RunRecord, AgentRun]:
        record = await self.store.get(run_id, with_log=True, scope=scope)
        if record is None:
            raise RunNotFound(f"no run with id {run_id}")
        return record, await recorded.loaded_run(self.store, record)

    async def _compacted(self, run_id: str) -> bool:
        """Whether the run's conversation was compacted (its early answers summarised)."""
        after = 0
        while True:
            page = await self.store.events(run_id, after=after, limit=1000)
            if any(e.type == E.RUN_COMPACTED for e in page):
                return True
            if len(page) < 1000:
                return False
            after = page[-1].seq

    async def forks(
        self, run_id: str, *, limit: int, cursor: str | None, scope: Scope
    ) -> tuple[list[RunView], str | None]:
        """The runs forked from `run_id` (in `scope`: a fork is its original's tenant's),
        oldest first; 404 for a run not in `scope`."""
        after = decode_cursor(cursor) if cursor else None
        await self.runs.owned(run_id, scope)
        found = await linked_runs(
            self.store.backend,
            "forked_from_run_id",
            run_id,
            limit=limit + 1,
            after=after,
            scope=scope,
        )
        return await self.runs.page(found, limit)

    async def checkpoints(self, run_id: str, *, scope: Scope) -> Checkpoints:
        """The run's checkpoints, oldest first (read off its log: nothing is written)."""
        record, run = await self._loaded(run_id, scope)
        history = run.full_history()
        given = len(history) - len(run.messages())
        calls = run.completion_calls()
        compacted = await self._compacted(record.id)
        base = _turn_base(record, run)
        data = list_checkpoints(history, given, calls, base, compacted=compacted)
        return Checkpoints(record.id, data, len(history))

    async def fork(
        self,
        run_id: str,
        body: ForkIn,
        *,
        scope: Scope,
        actor: str | None = None,
        idempotency_key: str | None = None,
        trace_parent: Mapping[str, str] | None = None,
    ) -> tuple[RunView, bool]:
        """A new run from checkpoint `body.at` of the run (in `scope`: else 404)."""
        record, run = await self._loaded(run_id, scope)
        history = run.full_history()
        given = len(history) - len(run.messages())
        start = min(given + 1, len(history))
        seq = body.at if body.at is not None else start
        if seq > len(history):
            raise InvalidRequest(
                f"at: run {record.id} has {len(history)} messages; its checkpoints are at "
                f"GET /v1/runs/{record.id}/checkpoints"
            )
        try:
            messages = patched(history[:seq], body.patch, seq)
        except SplitCall as exc:
            raise ForkSplit(str(exc), tool_call_id=exc.call_id) from None
        calls = run.completion_calls()
        base = _turn_base(record, run)
        compacted = await self._compacted(record.id)
        listed = list_checkpoints(history, given, calls, base, compacted=compacted)
        turn = turn_at(history, seq, listed, base)
        create = _create_body(record, body)
        max_turns = create.max_turns or self.runs.settings.default_max_turns
        if max_turns <= turn:
            raise InvalidRequest(
                f"max_turns {max_turns} leaves the fork no model call: {turn} were made before "
                f"checkpoint {seq}; give more (overrides.max_turns)"
            )
        mark: dict[str, Any] = {
            "run_id": record.id,
            "checkpoint": seq,
            "turn": turn,
            "mode": body.mode,
            "on_divergence": body.on_divergence,
        }
        # A place that ends with the model's calls starts one message before them: its
        # first model call is answered with the recorded message (`app.forks.replay`), so
        # the calls are checked as the run checks any (its tools, its invalid-call policy).
        opening, first_turn = messages, turn
        owners = call_owners(history, given, calls, compacted=compacted)
        recorded_answer = owners.get(seq - 1) is not None
        if len(messages) == seq and calls_of(messages[-1]) and recorded_answer:
            mark["seeded"] = True
            opening, first_turn = messages[:-1], turn - 1
        return await self.runs.create_run(
            create,
            idempotency_key=idempotency_key,
            actor=actor,
            trace_parent=trace_parent,
            tenant=record.tenant_id,
            marks={FORK_KEY: mark},
            begin=begin(opening, first_turn),
            hashed={"fork_of": record.id, **body.model_dump(mode="json")},
        )


def _turn_base(record: RunRecord, run: AgentRun) -> int:
    """The turns a run counted before its own first model call (a fork's checkpoint's)."""
    mark = record.config.get(FORK_KEY)
    if not isinstance(mark, dict):
        return 0
    turn = mark.get("turn")
    if type(turn) is not int:
        return 0
    return max(0, turn - 1) if mark.get("seeded") else max(0, turn)  # (seeded: one earlier)


def _create_body(record: RunRecord, body: ForkIn) -> RunCreate:
    """The create a fork is: the original's configuration, the overrides' fields over it."""
    config = record.config
    fields: dict[str, Any] = {k: config[k] for k in (*INHERITED, *OWN) if config.get(k) is not None}
    fields.update(
        prompt="(fork)",  # (unused: the fork's conversation is the checkpoint's)
        max_turns=record.max_turns,
        limits=record.limits,
        metadata=record.metadata,
        priority=record.priority,
    )
    if body.overrides is not None:
        given = body.overrides.model_fields_set
        fields.update(body.overrides.model_dump(mode="json", include=given))
    try:
        return RunCreate.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidRequest(f"overrides.{where}: {first['msg']}") from None
