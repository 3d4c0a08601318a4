"""The dashboard's words for a run waiting for its conversation (`if_busy: enqueue`)."""

from __future__ import annotations

from app.dashboard.present import waiting_reason_text


def test_a_waiting_run_names_the_run_it_waits_for() -> None:
    reason = {"type": "conversation", "run_id": "run_abc"}
    assert waiting_reason_text(reason) == "its conversation: run run_abc to end"
