"""The lifecycle table and the winner of every race, exhaustively (pure)."""

from __future__ import annotations

import itertools

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
            with pytest.raises(TransitionRefused) as refused:
                apply("run_1", status, transition)
            assert refused.value.current == status


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
