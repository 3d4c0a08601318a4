"""Misusing a method (an argument of the wrong type) raises before anything changes: the
run's whole serialised state is the same afterwards and the correct call still works.

The checks avoid `assert` so that the same function also runs under `python -O`, where
asserts vanish (the old `retry_model_turn` guard was one).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from app.core import (
    AgentRun,
    CompletionIdentity,
    Continue,
    ModelTurn,
    Repair,
    Repeat,
    Retry,
    Skip,
    Text,
    Usage,
    UserMessage,
)
from app.core.midstream import PartialStreamedTurn, TurnAbandoned
from tests.core.support import C, R, T, invalid_call, streamed, turn

ROOT = Path(__file__).resolve().parents[2]


def check(condition: bool, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def awaiting_model() -> AgentRun:
    run = AgentRun("q", max_turns=3, max_invalid_tool_call_retries=1)
    run.next_step()
    return run


def resolving() -> AgentRun:
    run = awaiting_model()
    run.model_response(turn(C("c1", "bad")))
    return run


def awaiting_advance() -> AgentRun:
    run = awaiting_model()
    run.model_response(T("rejected"))
    return run


def executing() -> AgentRun:
    run = awaiting_model()
    run.model_response(turn(C("c1"), C("c2")))
    run.next_step()
    return run


def _partial() -> PartialStreamedTurn:
    return PartialStreamedTurn(text="thinking ")


#: name → (make the run, the misuse and its error type, the legal call that must still work)
Case = tuple[
    Callable[[], AgentRun],
    Callable[[AgentRun], object],
    type[Exception],
    Callable[[AgentRun], object],
]
CASES: dict[str, Case] = {
    "resolve with a retry request": (
        resolving,
        lambda run: run.resolve_invalid_tool_call(Repeat()),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.resolve_invalid_tool_call(Repair("add")) == Continue(True),
    ),
    "resolve with a string": (
        resolving,
        lambda run: run.resolve_invalid_tool_call("skip"),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.resolve_invalid_tool_call(Skip("no")) == Continue(True),
    ),
    "retry a turn with an action": (
        awaiting_advance,
        lambda run: run.retry_model_turn(Retry("x")),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.retry_model_turn(Repeat()) is None and run.status == "PreparingRequest",
    ),
    "model_response with a string": (
        awaiting_model,
        lambda run: run.model_response("hi"),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.model_response(T("hi")) == Continue(False),
    ),
    "streamed_turn with a blocking turn": (
        awaiting_model,
        lambda run: run.streamed_turn(T("hi")),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.streamed_turn(streamed(Text("hi"))) is None,
    ),
    "record with usage as a tuple": (
        awaiting_model,
        lambda run: run.record_streamed_completion_call((1, 2)),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.record_streamed_completion_call(Usage(1, 2, 3)).call_index == 0,
    ),
    "record with a non-JSON raw payload": (
        awaiting_model,
        lambda run: run.record_streamed_completion_call(
            Usage(1, 2, 3), CompletionIdentity(), None, {"n": float("nan")}
        ),
        ValueError,
        lambda run: run.record_streamed_completion_call(Usage(1, 2, 3)).call_index == 0,
    ),
    "streamed resolution with a retry request": (
        awaiting_model,
        lambda run: run._resolve_streamed_invalid_tool_call(
            _partial(),
            invalid_call(C("c1", "bad")),
            Repeat(),  # type: ignore[arg-type]
        ),
        TypeError,
        lambda run: (
            run._resolve_streamed_invalid_tool_call(
                _partial(), invalid_call(C("c1", "bad")), Retry("fb")
            )
            == TurnAbandoned(None)
        ),
    ),
    "streamed resolution with a blocking turn as the partial": (
        awaiting_model,
        lambda run: run._resolve_streamed_invalid_tool_call(
            T("x"),  # type: ignore[arg-type]
            invalid_call(C("c1", "bad")),
            Retry("fb"),
        ),
        TypeError,
        lambda run: run.model_response(T("hi")) == Continue(False),
    ),
    "tool_results with one result, not a list": (
        executing,
        lambda run: run.tool_results(R("c1")),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.tool_results([R("c1"), R("c2")]) is None,
    ),
    "tool_results with a string": (
        executing,
        lambda run: run.tool_results("c1"),  # type: ignore[arg-type]
        TypeError,
        lambda run: run.tool_results([R("c1"), R("c2")]) is None,
    ),
}


def run_case(name: str) -> None:
    make, misuse, error, legal = CASES[name]
    run = make()
    before = run.to_json()
    try:
        misuse(run)
    except error:
        pass
    else:
        raise AssertionError(f"{name}: no {error.__name__}")
    check(run.to_json() == before, f"{name}: the refused call changed the run")
    check(bool(legal(run)), f"{name}: the correct call failed afterwards")


def check_constructor() -> None:
    for kwargs in (
        {"max_turns": None},
        {"max_turns": "3"},
        {"max_turns": 2.0},
        {"max_turns": True},
        {"max_invalid_tool_call_retries": None},
        {"max_output_retries": "1"},
        {"tool_choice": "auto"},
        {"output_tool_name": 5},
        {"history": "earlier"},
        {"history": [Text("not a message")]},
    ):
        try:
            AgentRun("q", **kwargs)
        except TypeError:
            continue
        raise AssertionError(f"AgentRun(**{kwargs}) was accepted")
    for kwargs in ({"max_turns": -1}, {"max_output_retries": 2**64}):
        try:
            AgentRun("q", **kwargs)
        except ValueError:
            continue
        raise AssertionError(f"AgentRun(**{kwargs}) was accepted")
    try:
        AgentRun(None)  # type: ignore[arg-type]
    except TypeError:
        pass
    else:
        raise AssertionError("AgentRun(None) was accepted")


def check_generator_results() -> None:
    """An iterable is read once: all of its results are checked and committed."""
    run = executing()
    run.tool_results(r for r in (R("c2"), R("c1")))
    last = run.messages()[-1]
    check(last == UserMessage([R("c2"), R("c1")]), f"committed {last!r}")
    check(run.status == "PreparingRequest", run.status)

    run = executing()
    before = run.to_json()
    try:
        run.tool_results(r for r in (R("c1"),))
    except Exception as err:  # a protocol violation: c2 unanswered
        check("unanswered" in str(err), str(err))
    check(run.to_json() == before, "a refused generator changed the run")


def all_checks() -> None:
    check_constructor()
    check_generator_results()
    for name in CASES:
        run_case(name)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_misused_method_leaves_the_run_unchanged(name: str) -> None:
    run_case(name)


def test_constructor_arguments_are_checked() -> None:
    check_constructor()


def test_a_generator_of_results_is_read_once() -> None:
    check_generator_results()


def test_the_same_checks_hold_under_python_O() -> None:
    code = (
        "from tests.core.test_misuse import all_checks\n"
        "assert False, 'asserts must be off'\n"
        "all_checks()\n"
        "print('ok', __debug__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-O", "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok False"


def test_model_turn_fields_are_checked_before_a_run_sees_them() -> None:
    with pytest.raises(TypeError):
        ModelTurn((Text("x"),), usage=None)  # type: ignore[arg-type]
    run = awaiting_model()
    before = run.to_json()
    bad: Any = object()
    with pytest.raises(TypeError):
        run.model_response(bad)
    assert run.to_json() == before
