"""What a provider's 429 teaches a limit key (`app.providers.ratelimit`, pure): the limit
its headers name, a configured limit staying the upper bound, a seed without either."""

from __future__ import annotations

import pytest

from app.providers.ratelimit import SEED_SHARE, named_limits, seed, taught


def test_openai_and_anthropic_name_their_limits_per_minute() -> None:
    openai = {"x-ratelimit-limit-requests": "480", "x-ratelimit-limit-tokens": "30000"}
    anthropic = {
        "anthropic-ratelimit-requests-limit": "50",
        "anthropic-ratelimit-tokens-limit": "40000",
    }
    assert named_limits(openai) == (480.0, 30000.0)
    assert named_limits(anthropic) == (50.0, 40000.0)


def test_a_missing_zero_or_garbled_limit_names_nothing() -> None:
    assert named_limits({}) == (None, None)
    assert named_limits({"x-ratelimit-limit-requests": "0"}) == (None, None)
    assert named_limits({"x-ratelimit-limit-tokens": "lots"}) == (None, None)
    assert named_limits({"x-ratelimit-limit-requests": "60"}) == (60.0, None)


def test_with_nothing_configured_the_named_limit_is_the_rate() -> None:
    assert taught(480.0, None) == 480.0


def test_a_configured_limit_is_an_upper_bound_a_learned_one_only_lowers_it() -> None:
    assert taught(60.0, 600) == 60.0
    assert taught(900.0, 600) is None  # (the store steps the configured rate down)
    assert taught(None, 600) is None
    assert taught(None, None) is None


def test_without_a_named_limit_the_seed_is_a_share_of_what_was_answered() -> None:
    assert seed(10, 5.0) == pytest.approx(10 / 5 * 60 * SEED_SHARE)
    assert seed(0, 5.0) is None  # (nothing answered: only the pause)
