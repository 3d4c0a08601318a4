"""The model-call gates: what a feature asks and is told around each model call, without
the driver knowing the feature (limits: budgets, shared rate and concurrency limits).

Before the call the driver asks each gate in turn (`before`): `Go` (possibly with a
changed request: a budget caps the output), `Defer` (the run goes back to the queue
until `due`: a shared limit is full), `Suspend` (the run waits with `reason`: a budget
is spent), `Answer` (the gate answers the call itself and no call is made: a replay from
a recorded run) or `Refuse` (the run fails with `error`: a replay that left its
recording and was asked to fail). A gate that said `Go` is told how the call ended:
`release` on every exit (the call ended, failed, was abandoned, or will not be made),
`answered` with its usage, `throttled` on a provider's 429. A gate may also listen to a
NOTIFY `channel` the worker LISTENs on (`heard`; `catch_up` after a (re)connection).

The gates come from the store's hooks (`app.store.hooks.Hooks.model_gates`, filled by the
composition root, `app.features.install`): one set per driver, made with the
driver's settings, clock and profiles (a gate may hold per-worker state). With no gate
registered a model call pays nothing: no statement, no await.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from app.clock import Clock
from app.core import Usage
from app.providers.base import ModelRequest, ProviderError, ProviderTurn
from app.providers.profiles import Profiles
from app.settings import Settings
from app.store.changes import Budget, RateLimit
from app.store.run_records import NewEvent
from app.store.runs import RunStore
from app.worker.lease import Claim


@dataclass(frozen=True, slots=True)
class Go:
    """The call may go with `request`; `ticket` comes back to the gate after it."""

    request: ModelRequest
    ticket: object = None


@dataclass(frozen=True, slots=True)
class Defer:
    """Back to the queue with `reason`, due at `due`, holding the turn `held`; written at
    `at` (the gate's decision). `queued`: called when that write left the run queued."""

    reason: RateLimit
    due: datetime
    held: datetime | None
    at: datetime
    queued: Callable[[], Awaitable[None]] | None = None


@dataclass(frozen=True, slots=True)
class Suspend:
    """The run waits with `reason` before the call is made (a spent budget)."""

    reason: Budget


@dataclass(frozen=True, slots=True)
class Answer:
    """The call is answered with `turn` and not made; `event` is the run's record of it
    (in place of a `model.called`: nothing is billed)."""

    turn: ProviderTurn
    event: NewEvent


@dataclass(frozen=True, slots=True)
class Refuse:
    """The run fails with `error` before the call is made."""

    error: dict[str, Any]


Verdict = Go | Defer | Suspend | Answer | Refuse


class ModelGate:
    """A gate asked before each model call; the after-hooks default to nothing."""

    channel: str | None = None  # a NOTIFY channel the worker LISTENs on for this gate

    async def before(self, claim: Claim, request: ModelRequest) -> Verdict:
        raise NotImplementedError

    async def release(self, ticket: object) -> None:
        """The call ended or will not be made (every exit path): free what it held."""

    def answered(self, ticket: object, usage: Usage) -> None:
        """The call answered, having used `usage`."""

    async def throttled(self, ticket: object, err: ProviderError) -> None:
        """The provider refused the call with a 429."""

    def heard(self, payload: str) -> None:
        """A notification on `channel`."""

    async def catch_up(self, now: datetime) -> None:
        """The worker's LISTEN (re)connected, or it has none: learn what was missed."""


def gates_of(
    store: RunStore, settings: Settings, clock: Clock, profiles: Profiles | None
) -> tuple[ModelGate, ...]:
    """The gates the store's hooks make for one driver, in registration order."""
    made: list[ModelGate] = []
    for maker in store.hooks.model_gates:
        made.extend(cast(tuple[ModelGate, ...], tuple(maker(settings, clock, profiles))))
    return tuple(made)
