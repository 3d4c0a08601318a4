"""The dashboard's words for a queued run that waits on something other than a worker:
its conversation (`if_busy: enqueue`) or a shared limit (`rate_limit`)."""

from __future__ import annotations

from app.dashboard.present import waiting_reason_text


def test_a_waiting_run_names_the_run_it_waits_for() -> None:
    reason = {"type": "conversation", "run_id": "run_abc"}
    assert waiting_reason_text(reason) == "its conversation: run run_abc to end"


def test_a_throttled_run_names_the_limit_the_key_and_its_turn() -> None:
    reason = {
        "type": "rate_limit",
        "limit": "requests_per_minute",
        "key": "model:openai/gpt-4o",
        "frees_at": "2026-12-02T06:00:00+00:00",
    }
    assert waiting_reason_text(reason) == (
        "shared limit requests_per_minute of model:openai/gpt-4o: "
        "its turn at 2026-12-02T06:00:00+00:00"
    )
    slot = {**reason, "limit": "max_concurrent", "frees_at": None}
    assert waiting_reason_text(slot).endswith(": a slot to free")
