"""The lifecycle table and the winner of every race, exhaustively (pure)."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from app.core.lifecycle import (
    TABLE,
    TERMINAL,
    RunStatus,
    Transition,
    TransitionRefused,
    apply,
    sources,
)

S, T = RunStatus, Transition


def test_terminal_statuses_absorb_everything_but_an_operator_retry() -> None:
    for status in TERMINAL:
        for transition in Transition:
            if transition == T.RETRY and status in (S.FAILED, S.EXPIRED):
                continue
            if transition in (T.BILL, T.ANNOTATE):  # events only, the status kept
                assert apply("run_1", status, transition) == status
                continue
            with pytest.raises(TransitionRefused) as refused:
                apply("run_1", status, transition)
            assert refused.value.current == status


def test_any_run_is_annotated_and_it_keeps_its_status() -> None:
    """`run.continued` goes on the earlier run of a conversation: finished, or still active
    when the new run waits for it (`if_busy: enqueue`); either way it keeps its status."""
    assert sources(T.ANNOTATE) == set(RunStatus)
    for status in RunStatus:
        assert apply("run_1", status, T.ANNOTATE) == status


def test_refusal_names_the_winner() -> None:
    with pytest.raises(TransitionRefused, match="run run_1 is cancelled; cannot resume it"):
        apply("run_1", S.CANCELLED, T.RESUME)


def test_every_status_is_reachable_from_queued() -> None:
    reached = {S.QUEUED}
    frontier = [S.QUEUED]
    while frontier:
        status = frontier.pop()
        for (src, _), dst in TABLE.items():
            if src == status and dst not in reached:
                reached.add(dst)
                frontier.append(dst)
    assert reached == set(RunStatus)


def test_sources_match_the_table() -> None:
    assert sources(T.CANCEL) == {S.QUEUED, S.RUNNING, S.REQUIRES_ACTION}
    assert sources(T.RESUME) == {S.REQUIRES_ACTION}
    assert sources(T.CLAIM) == {S.QUEUED}


def run_in_order(
    start: RunStatus, transitions: tuple[Transition, ...]
) -> tuple[RunStatus, list[Transition]]:
    """Apply racing transitions in commit order; return the end status and the losers."""
    status, losers = start, []
    for transition in transitions:
        try:
            status = apply("run_1", status, transition)
        except TransitionRefused:
            losers.append(transition)
    return status, losers


RACERS = {
    # A suspended run: results arrive, a client cancels, the reaper expires it.
    S.REQUIRES_ACTION: [T.RESUME, T.CANCEL, T.EXPIRE],
    # A running run: the worker finishes/suspends/fails, a client cancels, the lease is lost.
    S.RUNNING: [T.COMPLETE, T.SUSPEND, T.FAIL, T.CANCEL, T.LEASE_LOST],
}


@pytest.mark.parametrize("start", sorted(RACERS))
def test_every_ordering_of_racing_transitions_has_one_defined_winner(start: RunStatus) -> None:
    for order in itertools.permutations(RACERS[start]):
        end, losers = run_in_order(start, order)
        first = order[0]
        assert first not in losers, "the first commit always wins"
        after_first = apply("run_1", start, first)
        if after_first in TERMINAL:
            assert end == after_first and losers == list(order[1:])
        # At most one of the lease holder's own outcomes can land.
        worker_wins = [t for t in order if t in (T.COMPLETE, T.SUSPEND, T.FAIL) and t not in losers]
        assert len(worker_wins) <= 1


def test_worker_writes_after_cancel_or_lease_loss_are_refused() -> None:
    for winner in (T.CANCEL, T.LEASE_LOST):
        after = apply("run_1", S.RUNNING, winner)
        for late in (T.COMPLETE, T.SUSPEND, T.FAIL, T.BACKOFF):
            assert (after, late) not in TABLE


def test_results_after_expiry_or_cancel_are_refused_but_cancel_after_resume_wins() -> None:
    assert run_in_order(S.REQUIRES_ACTION, (T.EXPIRE, T.RESUME)) == (S.EXPIRED, [T.RESUME])
    assert run_in_order(S.REQUIRES_ACTION, (T.CANCEL, T.RESUME)) == (S.CANCELLED, [T.RESUME])
    assert run_in_order(S.REQUIRES_ACTION, (T.RESUME, T.CANCEL)) == (S.CANCELLED, [])
    assert run_in_order(S.REQUIRES_ACTION, (T.RESUME, T.EXPIRE)) == (S.QUEUED, [T.EXPIRE])


# --- the table is the only source of statuses ---------------------------------------------

APP = Path(__file__).resolve().parents[2] / "app"
#: Where status words mean something else: the providers' wire formats (a Responses
#: item's own `status`), and the table itself.
ELSEWHERE = ("providers",)


def _status_words() -> set[str]:
    from app.core.lifecycle import ApprovalStatus, OutboxStatus, RunStatus

    statuses = (RunStatus, OutboxStatus, ApprovalStatus)
    return {s.value for kind in statuses for s in kind}


def test_no_status_is_written_outside_the_lifecycle_table() -> None:
    """A status (of a run, or of a webhook delivery) is spelled only in
    `app/core/lifecycle.py`; everything else takes it from there (`RunStatus.X`, a
    transition's target), so the table is the one place a status is decided. Also no SQL
    text naming one. Checked on the syntax tree of every module."""
    words = _status_words()
    found = []
    for path in sorted(APP.rglob("*.py")):
        relative = path.relative_to(APP)
        if relative == Path("core/lifecycle.py") or relative.parts[0] in ELSEWHERE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
                continue
            if node.value in words or any(f"'{w}'" in node.value for w in words):
                found.append(f"{relative}:{node.lineno}: {node.value!r}")
    assert found == [], "status literals outside the lifecycle table:\n" + "\n".join(found)


def test_every_transition_has_one_target_or_keeps_the_status() -> None:
    from app.core.lifecycle import STAYS, TABLE, Transition, target

    for transition in Transition:
        ends = {b for (a, t), b in TABLE.items() if t == transition}
        assert ends, f"{transition} is in no row of the table"
        if transition in STAYS:
            assert all(a == b for (a, t), b in TABLE.items() if t == transition)
        else:
            assert ends == {target(transition)}
