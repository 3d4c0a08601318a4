"""The kernel's extension points: where a feature plugs into a run's life without the
kernel (the store, the service, the worker) knowing the feature exists, as Temporal's
interceptors do. Every point is named for when the kernel calls it; the features
register at start (`app.features.install`, the composition root's one list). Here,
beside the store, because the lowest kernel layer that calls one (`run_ended`) is the
store's.

- `run_ended`: called once a write that ended a run has committed, whoever wrote it (a
  worker's final write, a cancel, a resolution, the expiry sweep), with the run as
  written. A feature that reacts to a run's end (a conversation's next run starting)
  registers here instead of being called by hand after each of those writes.
- `sweeps`: periodic work a feature needs done by some worker (the runs a crash left
  waiting, approvals past their deadline), run by each worker's reaper at the sweep's
  period; what a sweep did is logged with its name.
- `round_gates`: asked by a worker suspending a run for a tool round whose configuration
  may gate calls (`RunConfig.gates`): a gate holds calls back from executors (approvals).
- `create_checks` / `create_trims`: a create's configuration is checked (a refusal is
  raised: 422) and its unset options trimmed (a run that uses no feature is configured
  and hashed as before the feature existed).
- `async_create_checks`: a create checked before the other checks (`Creating`: its
  configuration, its limits, the model's price, the creating service's settings), may
  await something outside the database (a webhook's destination resolved); a refusal is
  raised (422). The limits refuse a cost limit on a model without a price (any model
  the run may call: `called_models`).
- `called_models`: asked of a configuration, the models a feature calls for the run
  besides its own (compaction's summariser), by the field that names each: a create's
  checks (and a limits change) price every model the run may call.
- `continuations`: asked by a create that names a run to continue (`previous_run_id`):
  what the new run continues and whether it waits, then told once the run is committed
  (`Continuations`; conversations). None registered: such a create is refused.
- `may_reopen`: asked before an operator's retry puts an ended run back in the queue;
  a check refuses by raising (a conversation that went on from the run).
- `background`: a feature's loop each worker runs beside its slots while it runs (the
  webhook sender), opened before the worker starts and closed after it stops, woken by
  a NOTIFY on its channel.
- `model_gates`: makers of the gates each driver asks before a model call and tells after
  it (`app.worker.gates`: go, defer, suspend; usage, a 429, release), called with the
  driver's `(settings, clock, profiles)`. Typed as `ModelGate` there: the store sits below
  the worker. Budgets and shared limits (`app.limits`) register here.
- `templates`: asked by a create that names an agent (`"agent": "name@version"`): the
  create as that agent's version makes it (`Templates`; app.agents). None registered:
  such a create is refused.
- `round_spawns`: asked by a worker suspending a run whose configuration has agent tools
  (`RunConfig.spawns`): the child runs their calls start, created in the suspension's
  own transaction (each named on its call's row, which no executor is handed), and the
  calls refused with an error result the model reads (`Spawned`; app.agents).
- `round_answers`: asked by a worker about a tool round none of whose calls is answered
  yet, before it goes to its executors, with the run's record, its conversation, the
  round's calls, its turn and the claim's events so far (a hook may add one): the results of every
  call, in order, or None (the next is asked; none answers: the executors do). A round so
  answered is written at once (the run back in the queue, due now). A replay answers from
  the run it replays (app.forks).
- `turn_boundaries`: asked by a worker at each turn boundary, just before a model call
  (`Boundary`: the run's record, the run, the `CallModel` step about to be made, and
  `ModelCalls` through which the hook may make model calls of its own, billed as the
  run's): a `Rewrite` of the conversation, which the worker writes at once as one
  transition of its own (`rewrite`: its log batch replaces the lists, the run back in
  the queue), or None (the next is asked; none rewrites: the call is made). A hook's
  call that a gate holds back, or that fails retryably within the run's backoff budget,
  ends the claim as the turn's own call would (the run throttled, suspended, failed, or
  backed off: due later, and the hook asked again at its next claim); past that budget,
  or not retryable, the hook goes on without the answer. Compaction (app.compaction)
  replaces older turns with a summary here.
- `gauges`: readers of a feature's gauges that /metrics shows after the kernel's, each
  called with the scrape's time (Prometheus metric families, typed as objects: the store
  sits below the API; the shared limits' keys).

A `run_ended` hook runs after the commit, so it cannot undo the write; one that fails is
logged and the next still runs (a feature keeps a sweep for what a crash between the
commit and its hook leaves undone). With nothing registered, each point costs a truth
test or a loop over an empty tuple: no statement, no await.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

import structlog

from app.clock import Clock
from app.core import AgentRun, CallModel, Message, PendingToolCall, UserContent
from app.core.scope import Scope
from app.providers.base import ModelRequest, ProviderTurn
from app.settings import Settings
from app.store.config import RunConfig
from app.store.run_records import NewEvent, NewToolCall, RunRecord, SpawnedRun

log = structlog.get_logger("agentrun.store")

#: `(the run as its ending write left it, the write's time)`.
RunEnded = Callable[[RunRecord, datetime], Awaitable[object]]
#: `(the run's configuration, the round's rows, the round, the clock)`: marks the rows it
#: holds (in place) and returns the data of the `run.approval_required` event, or None.
RoundGate = Callable[
    [RunConfig, list[NewToolCall], int, Callable[[], datetime]], dict[str, Any] | None
]
#: `(the agent configuration a create is about to store)`: raises to refuse it.
CreateCheck = Callable[[Mapping[str, Any]], None]
#: `(a create's request or configuration)`: it without the options left unset.
CreateTrim = Callable[[dict[str, Any]], dict[str, Any]]
#: `(settings, clock, profiles) -> the gates of one driver` (`app.worker.gates.ModelGate`).
GateMaker = Callable[..., Sequence[object]]
#: `(the scrape's time) -> metric families` (`prometheus_client` `Metric`s).
GaugeReader = Callable[[datetime], Awaitable[Sequence[object]]]


@dataclass(frozen=True)
class Sweep:
    """Periodic work of a feature: `run(now)` returns the ids of the runs it moved on."""

    name: str  # (what the log says it did: "approvals timed out")
    run: Callable[[datetime], Awaitable[Sequence[str]]]
    every: float | None = None  # seconds between two runs; None: at every reap


@dataclass(frozen=True, slots=True)
class Creating:
    """A create as `async_create_checks` see it."""

    agent: Mapping[str, Any]  # the agent configuration about to be stored
    limits: Mapping[str, Any] | None  # the run's limits as they would be stored
    # The models the run may call (`Hooks.models_of`) that have no price (the service's
    # price book), by the field that names each (`model`, `compaction.model`).
    unpriced: Mapping[str, Mapping[str, Any]]
    settings: Settings  # the creating service's
    tenant: str = "default"  # whose run it is (an agent tool names one of its agents)


#: `(the create)`: raises to refuse it.
AsyncCreateCheck = Callable[[Creating], Awaitable[None]]

#: `(a run's configuration)`: the model specs a feature calls for the run besides its own
#: model, by the field that names each (`{"compaction.model": spec}`).
CalledModels = Callable[[Mapping[str, Any]], Mapping[str, Mapping[str, Any]]]

#: `(the ended run an operator is about to retry, the caller's scope)`: raises to refuse.
MayReopen = Callable[[RunRecord, Scope], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Continuation:
    """What a new run takes from the run it continues: its conversation as history, its
    configuration (what the body leaves out is inherited); `waits_for`: the active run it
    waits for (it is created parked until that one ends, then started with its history)."""

    previous_id: str
    conversation_id: str  # (the first run's id)
    history: tuple[Message, ...]
    config: Mapping[str, Any]
    waits_for: str | None = None


class Cancel(Protocol):
    """The service's cancel: a run cancelled as a client's cancel would (its waiter
    started, its span recorded); `RunStateConflict` when it has ended already."""

    async def __call__(self, run_id: str, *, actor: str | None, scope: Scope) -> object: ...


@dataclass(frozen=True)
class Continuing:
    """A create that names a run to continue, as `Continuations` is asked about it; with
    the service's clock (read at each call) and cancel."""

    previous_id: str
    if_busy: str  # reject | enqueue | interrupt
    inherits_model: bool  # (the body leaves `model` out)
    idempotency_key: str | None
    actor: str | None
    tenant: str
    now: Callable[[], datetime]
    cancel: Cancel


class Continuations(Protocol):
    """Runs that continue others (a feature's): the create asks `continued` before its
    write and tells `created` after its commit (also on an idempotent replay: the step
    a crash may skip)."""

    async def continued(self, create: Continuing) -> Continuation:
        """What the new run continues; raises the create's refusal (404, 409, 422)."""
        ...

    async def created(
        self, create: Continuing, before: Continuation, record: RunRecord, *, replayed: bool
    ) -> bool:
        """The new run `record` is committed (`replayed`: by an earlier request); True
        when it was started meanwhile (the kernel reads it again)."""
        ...


class Loop(Protocol):
    """One worker's instance of a background loop."""

    async def run(self, woken: asyncio.Event) -> None:
        """Work until cancelled; `woken` is set when a NOTIFY on the loop's channel
        arrives (and when the worker's LISTEN connection is re-established)."""
        ...

    async def aclose(self) -> None:
        """Release what the loop holds (the worker calls it once the loop has ended)."""
        ...


@dataclass(frozen=True)
class Background:
    """A feature's loop that each worker runs: `open(worker id, the worker's settings,
    its clock)` before the worker starts (a failure stops the worker's start, as its own
    setup would)."""

    name: str
    open: Callable[[str, Settings, Clock], Awaitable[Loop]]
    channel: str | None = None  # the NOTIFY channel that wakes it (None: none)


@dataclass(frozen=True, slots=True)
class Spawned:
    """What a round's spawner made of its agent tools' calls: the children to create (each
    named on its call's row), and the calls it refused (by position), answered at once
    with an error result naming why (too deep, too many children, no such agent)."""

    children: tuple[SpawnedRun, ...] = ()
    refused: Mapping[int, str] = field(default_factory=dict)


#: `(the run, its conversation, the round's calls, its turn, the claim's events)`: every
#: call's result in order, or None (`round_answers`).
RoundAnswerer = Callable[
    [RunRecord, tuple[Message, ...], tuple[PendingToolCall, ...], int, list[NewEvent]],
    Awaitable[list[UserContent] | None],
]


#: `(the suspending run, the round's rows, the round, the time)`: names each child on its
#: call's row (in place) and returns them.
RoundSpawner = Callable[[RunRecord, list[NewToolCall], int, datetime], Awaitable[Spawned]]


class ModelCalls(Protocol):
    """Model calls a turn-boundary hook makes through the worker (`app.worker.boundaries`):
    asked of the model gates, held under the claim's lease, and recorded on the claim as
    the run's own calls are (`model.called` with `purpose`, billed to the run), their
    failures retried as theirs are (the run's backoff budget)."""

    async def call(
        self, spec: Mapping[str, Any], request: ModelRequest, purpose: str
    ) -> ProviderTurn | None:
        """The answer of `spec`'s model to `request`; None when no answer came: the call
        failed (a `model.failed` is recorded) or a gate held it back. A gate's verdict,
        or a retryable failure within the run's backoff budget, stops the hook's calls
        (the next return None at once): once the hook returns (what it returns is
        dropped), the worker does what the gate said (throttle, suspend, fail) or backs
        the run off, and the hook is asked again at its next claim. A failure that is
        not retryable, or past the budget, stops nothing: the hook goes on without it."""
        ...


@dataclass(frozen=True, slots=True)
class Boundary:
    """A turn boundary as `turn_boundaries` see it: the model call `step` is about to be
    made. `run` is the worker's (read it; do not advance it)."""

    record: RunRecord
    run: AgentRun
    step: CallModel
    calls: ModelCalls


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The conversation a run goes on with: its given history (None: none, as the run's
    was) and its own messages (the next prompt last), and the events that say why."""

    history: tuple[Message, ...] | None
    messages: tuple[Message, ...]
    events: tuple[NewEvent, ...] = ()


#: `(the boundary)`: the conversation to go on with, or None (`turn_boundaries`).
TurnBoundary = Callable[[Boundary], Awaitable[Rewrite | None]]


class Templates(Protocol):
    """Named agents (a feature's): what a create that names one becomes."""

    async def body_of(self, body: Any, tenant: str) -> tuple[Any, Mapping[str, Any]]:
        """The create `body` (a `RunCreate`) as the agent it names makes it, and the
        agent's `{"name", "version"}`; raises the create's refusal (404, 422)."""
        ...


class Hooks:
    """The hooks registered on one store (the composition root registers the features')."""

    def __init__(self) -> None:
        self.run_ended: tuple[RunEnded, ...] = ()
        self.sweeps: tuple[Sweep, ...] = ()
        self.round_gates: tuple[RoundGate, ...] = ()
        self.create_checks: tuple[CreateCheck, ...] = ()
        self.create_trims: tuple[CreateTrim, ...] = ()
        self.async_create_checks: tuple[AsyncCreateCheck, ...] = ()
        self.continuations: Continuations | None = None
        self.may_reopen: tuple[MayReopen, ...] = ()
        self.background: tuple[Background, ...] = ()
        self.model_gates: tuple[GateMaker, ...] = ()
        self.gauges: tuple[GaugeReader, ...] = ()
        self.templates: Templates | None = None
        self.round_spawns: RoundSpawner | None = None
        self.round_answers: tuple[RoundAnswerer, ...] = ()
        self.turn_boundaries: tuple[TurnBoundary, ...] = ()
        self.called_models: tuple[CalledModels, ...] = ()

    def on_run_ended(self, hook: RunEnded) -> None:
        self.run_ended = (*self.run_ended, hook)

    def add_sweep(self, sweep: Sweep) -> None:
        self.sweeps = (*self.sweeps, sweep)

    def add_round_gate(self, gate: RoundGate) -> None:
        self.round_gates = (*self.round_gates, gate)

    def on_create(self, check: CreateCheck, trim: CreateTrim) -> None:
        self.create_checks = (*self.create_checks, check)
        self.create_trims = (*self.create_trims, trim)

    def on_create_async(self, check: AsyncCreateCheck) -> None:
        self.async_create_checks = (*self.async_create_checks, check)

    def gate_round(
        self, config: RunConfig, rows: list[NewToolCall], round: int, clock: Callable[[], datetime]
    ) -> dict[str, Any] | None:
        """Ask every round gate about a round's `rows` (held ones marked in place); the data
        of its `run.approval_required` event (the last gate's that held any), or None."""
        required = None
        for gate in self.round_gates:
            required = gate(config, rows, round, clock) or required
        return required

    def trim(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` without the options the features' trims drop."""
        for trim in self.create_trims:
            request = trim(request)
        return request

    def continue_with(self, continuations: Continuations) -> None:
        self.continuations = continuations

    def on_may_reopen(self, check: MayReopen) -> None:
        self.may_reopen = (*self.may_reopen, check)

    def add_background(self, loop: Background) -> None:
        self.background = (*self.background, loop)

    def add_model_gates(self, maker: GateMaker) -> None:
        self.model_gates = (*self.model_gates, maker)

    def add_gauges(self, reader: GaugeReader) -> None:
        self.gauges = (*self.gauges, reader)

    def template_with(self, templates: Templates) -> None:
        self.templates = templates

    def spawn_with(self, spawner: RoundSpawner) -> None:
        self.round_spawns = spawner

    def add_round_answers(self, answerer: RoundAnswerer) -> None:
        self.round_answers = (*self.round_answers, answerer)

    def add_turn_boundary(self, hook: TurnBoundary) -> None:
        self.turn_boundaries = (*self.turn_boundaries, hook)

    def add_called_models(self, reader: CalledModels) -> None:
        self.called_models = (*self.called_models, reader)

    def models_of(self, config: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
        """Every model a run of `config` may call, by the field that names it: its own
        (`model`), then the features' (`called_models`)."""
        out: dict[str, Mapping[str, Any]] = {"model": config["model"]}
        for reader in self.called_models:
            out.update(reader(config))
        return out

    async def ended(self, records: list[RunRecord], now: datetime) -> None:
        """Tell every `run_ended` hook of each of `records` (runs a write just ended)."""
        for record in records:
            for hook in self.run_ended:
                try:
                    await hook(record, now)
                except Exception:
                    log.exception("run_ended hook failed", run_id=record.id)
