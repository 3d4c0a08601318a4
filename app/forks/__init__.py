"""Forks, replays and checkpoints of runs (`checkpoints`: where a run can be branched,
read off its log; `plan`: a fork's conversation and state machine; `service`: the
operations; `replay`: a replay's answers from its recording; `routes`: the HTTP routes,
mounted by the composition root). The kernel knows none of it: `install` plugs the
replay into the worker's extension points (`app.store.hooks`)."""

from __future__ import annotations

from typing import Any

from app.forks.replay import ReplayGate, Replays, RoundReplies
from app.forks.service import ForkService
from app.service.runs import RunService
from app.store.runs import RunStore


def install(store: RunStore) -> None:
    """A replay's model calls are answered by a gate asked before any other (install this
    first: an answered call passes no budget), its tool rounds by a round answerer."""
    replays = Replays(store)

    def gates(*_: Any) -> tuple[ReplayGate]:
        return (ReplayGate(replays),)

    store.hooks.add_model_gates(gates)
    store.hooks.add_round_answers(RoundReplies(replays))


def fork_service(runs: RunService) -> ForkService:
    return ForkService(runs)
