"""A replay: a fork whose model calls are answered from the run it was made from.

While a replay's request is the one the recorded run made at the same place (the same
model, preamble, tools, tool choice and output schema, and the same conversation so
far), the model's recorded answer is fed to the run and no call is made (`model.replayed`,
nothing billed); a tool round whose calls the recording answered gets the recorded
results (`tools.replayed`), no executor asked. At the first difference the replay
records it (`replay.diverged`: the turn and what differed) and goes on live from there,
or fails (`on_divergence: fail`). A replay with no patch and no override so reproduces
its original with no model call at all.

Both answers plug into the worker's extension points: a model gate (`Answer`, `Refuse`)
and a round answerer (`app.store.hooks`). A run that is no replay costs a dict lookup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core import AgentRun, AssistantMessage, Message, PendingToolCall, Usage, UserContent
from app.core.events import EventType as E
from app.core.scope import Scope
from app.core.serde import message_to_dict
from app.forks.checkpoints import call_owners, results_of
from app.providers.base import ModelRequest, ProviderTurn
from app.service import recorded
from app.service.lineage import FORK_KEY
from app.store.run_records import NewEvent, RunRecord
from app.store.runs import RunStore
from app.worker.gates import Answer, Go, ModelGate, Refuse, Verdict
from app.worker.lease import Claim

#: The configuration a model call's request is made of, besides the conversation.
REQUEST_KEYS = ("model", "preamble", "tools", "tool_choice", "output_schema")


def _requested(key: str, value: Any) -> Any:
    """What of a configuration field reaches the model: of tools, their names,
    descriptions and parameters (not who executes or approves them)."""
    if key != "tools" or not isinstance(value, list):
        return value
    return [
        {k: t.get(k) for k in ("name", "description", "parameters")} if isinstance(t, dict) else t
        for t in value
    ]


def replay_mark(record: RunRecord) -> dict[str, Any] | None:
    """A replay's fork mark (or a fork's whose first call is the recorded one)."""
    mark = record.config.get(FORK_KEY)
    if not isinstance(mark, dict):
        return None
    return mark if mark.get("mode") == "replay" or mark.get("seeded") else None


@dataclass(frozen=True, slots=True)
class Recording:
    """The recorded run: its configuration, conversation and model calls."""

    record: RunRecord
    run: AgentRun

    @property
    def messages(self) -> tuple[Message, ...]:
        return self.run.full_history()

    def differs(self, config: dict[str, Any]) -> str | None:
        for key in REQUEST_KEYS:
            if _requested(key, config.get(key)) != _requested(key, self.record.config.get(key)):
                return f"the request's {key} differs from the recording's"
        return None

    def same_history(self, history: Sequence[Message]) -> str | None:
        """Why `history` is not the recording's first messages, or None."""
        recorded_ = self.messages
        for i, message in enumerate(history):
            if i >= len(recorded_) or message_to_dict(message) != message_to_dict(recorded_[i]):
                return f"message {i} of the conversation differs from the recording's"
        return None

    def answer_after(self, n: int) -> ProviderTurn | None:
        """The model's recorded answer to the conversation's first `n` messages."""
        messages = self.messages
        if n >= len(messages) or not isinstance(messages[n], AssistantMessage):
            return None
        message = messages[n]
        assert isinstance(message, AssistantMessage)
        given = len(messages) - len(self.run.messages())
        calls = self.run.completion_calls()
        index = call_owners(messages, given, calls).get(n)
        if index is None:  # (a message given, not answered by a model call of the run)
            return None
        call = calls[index] if index < len(calls) else None
        return ProviderTurn(
            choice=message.content,
            usage=Usage(),
            message_id=message.id,
            response_id=call.response_id if call else None,
            provider_request_id=call.provider_request_id if call else None,
            finish_reason=call.finish_reason if call else None,
            raw=call.raw if call else None,
        )

    def results_after(self, n: int, pending: Sequence[PendingToolCall]) -> list[UserContent] | None:
        """The recorded results of `pending` (the calls the conversation's first `n`
        messages end with), in their order, or None."""
        messages = self.messages
        if n >= len(messages):
            return None
        found = {r.call_id: r for r in results_of(messages[n])}
        out: list[UserContent] = []
        for p in pending:
            result = p.preresolved_result or found.get(p.tool_call.id)
            if result is None:
                return None
            out.append(result)
        return out


class Replays:
    """The replays' reads: a recording, and whether a replay left its recording already.

    Both are remembered (a few runs' worth): a recording while its run's version stays
    the same (a cheap read without the log tells), a replay's events up to the last one
    read; a long replay so reads each recording once and each event once, not once per
    turn."""

    KEPT = 16

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self._recordings: dict[str, Recording] = {}
        self._read: dict[str, tuple[int, bool]] = {}  # run -> (events read, diverged)

    async def recording(self, mark: dict[str, Any]) -> Recording | None:
        source = mark.get("run_id")
        if not isinstance(source, str):
            return None
        known = self._recordings.get(source)
        if known is not None:
            now = await self.store.get(source, scope=Scope.ALL)
            if now is not None and now.version == known.record.version:
                return known
        record = await self.store.get(source, with_log=True, scope=Scope.ALL)
        if record is None:
            self._recordings.pop(source, None)
            return None
        found = Recording(record, await recorded.loaded_run(self.store, record))
        _keep(self._recordings, source, found, self.KEPT)
        return found

    async def diverged(self, record: RunRecord, events: Sequence[NewEvent]) -> bool:
        if any(e.type == E.REPLAY_DIVERGED for e in events):
            return True
        after, diverged = self._read.get(record.id, (0, False))
        while not diverged:  # (read on from where the last look stopped)
            page = await self.store.events(record.id, after=after, limit=1000)
            diverged = any(e.type == E.REPLAY_DIVERGED for e in page)
            after = page[-1].seq if page else after
            if len(page) < 1000:
                break
        _keep(self._read, record.id, (after, diverged), self.KEPT)
        return diverged


def _keep(memo: dict[str, Any], key: str, value: Any, kept: int) -> None:
    """Remember `value` under `key`, forgetting the oldest beyond `kept`."""
    memo.pop(key, None)
    memo[key] = value
    while len(memo) > kept:
        memo.pop(next(iter(memo)))


def _seeded(mark: dict[str, Any], history: Sequence[Message], turn: int) -> bool:
    """Whether this is the first model call of a fork made at a `tool_calls` place: its
    answer is the recorded one (the calls the place ends with), whatever the fork's mode."""
    at = mark.get("checkpoint")
    return (
        bool(mark.get("seeded"))
        and type(at) is int
        and len(history) == at - 1
        and (turn == mark.get("turn"))
    )


def _replayed(
    turn: int, source: Recording, answer: ProviderTurn, *, seeded: bool = False
) -> NewEvent:
    data: dict[str, Any] = {
        "turn": turn,
        "source_run_id": source.record.id,
        "message_id": answer.message_id,
    }
    if seeded:
        data["seeded"] = True
    return NewEvent(E.MODEL_REPLAYED, data)


def _diverged(turn: int, reason: str, mark: dict[str, Any]) -> NewEvent:
    return NewEvent(
        E.REPLAY_DIVERGED,
        {"turn": turn, "reason": reason, "on_divergence": mark.get("on_divergence", "live")},
    )


class ReplayGate(ModelGate):
    """Answers a replay's model calls from its recording (registered before the other
    gates: an answered call passes no budget, holds no limit)."""

    def __init__(self, replays: Replays) -> None:
        self.replays = replays

    async def before(self, claim: Claim, request: ModelRequest) -> Verdict:
        record = claim.record
        mark = replay_mark(record)
        if mark is None or request.purpose is not None:  # (a hook's call is no turn)
            return Go(request)
        history = (*request.history, request.prompt)
        if _seeded(mark, history, request.turn):  # (a fork's first: the recorded answer)
            source = await self.replays.recording(mark)
            seed = None if source is None else source.answer_after(len(history))
            if source is not None and seed is not None:
                return Answer(seed, _replayed(request.turn, source, seed, seeded=True))
        if mark.get("mode") != "replay":
            return Go(request)
        if await self.replays.diverged(record, claim.events):
            if mark.get("on_divergence") == "fail":  # (a round went live: fails here)
                message = f"the replay left its recording before turn {request.turn}"
                return Refuse({"type": "replay_diverged", "message": message})
            return Go(request)
        source = await self.replays.recording(mark)
        if source is None:
            why: str | None = "the recorded run is gone"
        else:
            why = source.differs(record.config) or source.same_history(history)
        answer = None if why is not None or source is None else source.answer_after(len(history))
        if answer is not None and source is not None:
            return Answer(answer, _replayed(request.turn, source, answer))
        why = why or "the recording has no model answer at this point"
        claim.events.append(_diverged(request.turn, why, mark))
        if mark.get("on_divergence") == "fail":
            message = f"the replay left its recording at turn {request.turn}: {why}"
            return Refuse({"type": "replay_diverged", "message": message})
        return Go(request)


class RoundReplies:
    """Answers a replay's tool rounds with the results its recording holds."""

    def __init__(self, replays: Replays) -> None:
        self.replays = replays

    async def __call__(
        self,
        record: RunRecord,
        history: tuple[Message, ...],
        calls: tuple[PendingToolCall, ...],
        turn: int,
        events: list[NewEvent],
    ) -> list[UserContent] | None:
        mark = replay_mark(record)
        if mark is None or mark.get("mode") != "replay":
            return None
        if await self.replays.diverged(record, events):
            return None
        source = await self.replays.recording(mark)
        why = "the recorded run is gone" if source is None else source.same_history(history)
        results = None
        if source is not None and why is None:
            results = source.results_after(len(history), calls)
            if results is None:
                why = "the recording holds no results of this round"
        if results is None:
            events.append(_diverged(turn, why or "", mark))
            return None
        ids = [c.tool_call.id for c in calls]
        events.append(
            NewEvent(
                E.TOOLS_REPLAYED,
                {"turn": turn, "source_run_id": mark["run_id"], "tool_call_ids": ids},
            )
        )
        return results
