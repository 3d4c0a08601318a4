"""Real worker processes sharing a provider's quota through PostgreSQL (small scale of
`bench/flow_control.py`): with the profile's limit at the quota the quota-enforcing mock
never answers 429 and every run completes; above it, 429s come only in the first burst."""

from __future__ import annotations

import argparse

from bench.flow_control import scenario


def bench_args(server: str, runs: int) -> argparse.Namespace:
    return argparse.Namespace(
        server=server, runs=runs, workers=2, slots=4, rpm=120, tpm=60000, timeout=120.0
    )


async def test_workers_at_the_quota_get_no_429(postgres_server: str) -> None:
    result = await scenario(bench_args(postgres_server, 120), 1.0)
    assert result["runs"] == {"completed": 120}
    assert result["429s"] == 0


async def test_workers_above_the_quota_learn_it_from_the_first_429s(
    postgres_server: str,
) -> None:
    result = await scenario(bench_args(postgres_server, 160), 2.0)
    assert result["runs"] == {"completed": 160}
    per_minute = result["429s_per_minute"]
    assert isinstance(per_minute, list) and sum(per_minute[1:]) <= 3
    assert result["learned_rpm"] == {"profile:openai": 120.0}  # the provider's own limit
