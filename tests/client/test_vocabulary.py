"""The client (a distribution of its own: it never imports `app`) keeps copies of the
service's vocabulary; each copy is compared here with the service's definition, both ways:
a status, event type, action kind, ... the service gains fails its test until the client
has it, and one the service drops fails until the client drops it.

Every copy the client keeps is one entry of `COPIES` (or, for the problem catalogue, a test
of its own below); a new copy in the client belongs here too."""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterable
from enum import Enum
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from agentrun_client import _agents, _base, _forks, _schedules, errors, models
from agentrun_client.cli import runs as runs_cli
from app.api import models as api_models
from app.api.problems import CATALOGUE
from app.core import events, lifecycle
from app.forks import specs as fork_specs
from app.schedules import specs as schedule_specs
from app.service import schemas


def enum_members(enum: type[Enum]) -> set[str]:
    """Names and values: the client's `EventType.RUN_CLAIMED` is the service's."""
    return {f"{m.name}={m.value}" for m in enum}


def literal_values(annotation: Any) -> set[str]:
    """The strings of a `Literal[...]` (of the first one, in a union with other types)."""
    while not all(isinstance(a, str) for a in get_args(annotation)):
        annotation = get_args(annotation)[0]
    return set(get_args(annotation))


def field_literal(model: type[BaseModel], name: str) -> set[str]:
    return literal_values(model.model_fields[name].annotation)


def action_kinds(union: Any) -> set[str]:
    """The `type` of each kind of required action a union of models holds."""
    kinds: list[type[BaseModel]] = []
    for arg in get_args(union):
        if isinstance(arg, types.UnionType):
            kinds.extend(get_args(arg))
        elif isinstance(arg, type) and issubclass(arg, BaseModel):
            kinds.append(arg)
    return {str(k.model_fields["type"].default) for k in kinds if k is not models.RequiredAction}


def strings(values: Iterable[Any]) -> set[str]:
    return {str(v) for v in values}


#: name -> (the client's copy, the service's definition), each as a set of strings.
COPIES: dict[str, tuple[Callable[[], set[str]], Callable[[], set[str]]]] = {
    "run statuses (models.RunStatus)": (
        lambda: enum_members(models.RunStatus),
        lambda: enum_members(lifecycle.RunStatus),
    ),
    "terminal statuses (models.TERMINAL)": (
        lambda: strings(models.TERMINAL),
        lambda: strings(lifecycle.TERMINAL),
    ),
    "event types (models.EventType)": (
        lambda: enum_members(models.EventType),
        lambda: enum_members(events.EventType),
    ),
    # (A run's stream ends with the event of its terminal status: `run.<status>`.)
    "events that end a stream (models.TERMINAL_EVENTS)": (
        lambda: strings(models.TERMINAL_EVENTS),
        lambda: {events.EventType(f"run.{s}").value for s in lifecycle.TERMINAL},
    ),
    "approval statuses (models.ApprovalStatus)": (
        lambda: enum_members(models.ApprovalStatus),
        lambda: enum_members(lifecycle.ApprovalStatus),
    ),
    "kinds of required action (models.Action)": (
        lambda: action_kinds(get_args(models.Action)[0]),
        lambda: action_kinds(api_models.RunOut.model_fields["required_action"].annotation),
    ),
    "message roles (models.Message.role)": (
        lambda: field_literal(models.Message, "role"),
        lambda: field_literal(schemas.HistoryMessage, "role"),
    ),
    "if_busy (_base.IfBusy)": (
        lambda: literal_values(_base.IfBusy),
        lambda: field_literal(schemas.RunCreate, "if_busy"),
    ),
    "run limits (cli.runs.LIMITS)": (
        lambda: set(runs_cli.LIMITS),
        lambda: set(schemas.RunLimits.model_fields),
    ),
    "tool choices (cli.runs.TOOL_CHOICES)": (
        lambda: set(runs_cli.TOOL_CHOICES),
        lambda: literal_values(schemas.ToolChoiceIn),
    ),
    "agent names (_agents.AGENT_NAME)": (
        lambda: {_agents.AGENT_NAME},
        lambda: {schemas.AGENT_NAME},
    ),
    "schedule keys (the agents' rule, _agents.AGENT_NAME)": (
        lambda: {_agents.AGENT_NAME},
        lambda: {
            m.pattern
            for m in schedule_specs.ScheduleIn.model_fields["key"].metadata
            if hasattr(m, "pattern")
        },
    ),
    # (The command line's choices are these: `_schedules.OVERLAPS`, `CATCHUPS`.)
    "schedule overlaps (_schedules.Overlap)": (
        lambda: literal_values(_schedules.Overlap),
        lambda: literal_values(schedule_specs.Overlap),
    ),
    "schedule catch-ups (_schedules.Catchup)": (
        lambda: literal_values(_schedules.Catchup),
        lambda: literal_values(schedule_specs.Catchup),
    ),
    "fork modes (_forks.ForkMode)": (
        lambda: literal_values(_forks.ForkMode),
        lambda: field_literal(fork_specs.ForkIn, "mode"),
    ),
    "a replay at its first difference (_forks.OnDivergence)": (
        lambda: literal_values(_forks.OnDivergence),
        lambda: field_literal(fork_specs.ForkIn, "on_divergence"),
    ),
    "invalid tool call actions (cli.runs.INVALID_TOOL_CALL_ACTIONS)": (
        lambda: set(runs_cli.INVALID_TOOL_CALL_ACTIONS),
        lambda: field_literal(schemas.InvalidToolCallPolicy, "action"),
    ),
}


@pytest.mark.parametrize("name", list(COPIES))
def test_the_clients_copy_is_the_services(name: str) -> None:
    client_side, service_side = (read() for read in COPIES[name])
    assert client_side, f"{name}: nothing read from the client (is the reader wrong?)"
    missing, stale = sorted(service_side - client_side), sorted(client_side - service_side)
    assert not missing and not stale, (
        f"{name}: the client lacks {missing}; the service has no {stale}"
    )


def test_a_wait_knows_what_moves_a_run_into_each_status() -> None:
    """`wait` looks again after the events of the statuses it waits for (`_base._REACHES`):
    a status without them would never be seen."""
    assert set(_base._REACHES) == set(models.RunStatus)
    assert all(set(e) <= set(models.EventType) for e in _base._REACHES.values())


#: Statuses of problems a client sending through this library should never get: they
#: stay plain `APIError`s rather than classes of their own.
PLAIN = {405, 415}


def test_every_status_of_the_problem_catalogue_has_its_exception() -> None:
    statuses = {status for status, _, _ in CATALOGUE.values() if status < 500}
    unmapped = statuses - set(errors._BY_STATUS) - PLAIN
    assert not unmapped, f"add an exception class (errors._BY_STATUS) for {sorted(unmapped)}"
    assert set(errors._BY_STATUS) - {503} <= statuses, "a status the service never answers"


def test_the_problems_the_exceptions_name_are_the_catalogues_of_their_status() -> None:
    """The docstrings say which problem codes each class catches: each is a code of the
    catalogue with that class's status."""
    named = 0
    for status, cls in errors._BY_STATUS.items():
        for code in re.findall(r"`([a-z]+(?:-[a-z]+)+)`", cls.__doc__ or ""):
            assert code in CATALOGUE, f"{cls.__name__} names {code!r}: not a problem code"
            assert CATALOGUE[code][0] == status, f"{code!r} is not a {status}"
            named += 1
    assert named >= 5
