"""The parameters a summary takes from the run's own model (`app.compaction.params`):
documented ones of each wire's table, none that shapes an answer."""

from __future__ import annotations

import pytest

from app.compaction.params import INHERITED, summary_params
from app.providers.params import TABLES


@pytest.mark.parametrize("table", sorted(TABLES))
def test_every_inherited_parameter_is_one_of_its_wire_s(table: str) -> None:
    assert INHERITED[table] <= TABLES[table].names()


def test_a_summary_takes_who_and_where_and_nothing_else() -> None:
    spec = {
        "provider": "anthropic",
        "name": "claude-test",
        "max_tokens": 100,
        "thinking": {"type": "enabled", "budget_tokens": 8000},
        "stop_sequences": ["END"],
        "output_config": {"format": {"type": "json_schema", "schema": {}}},
        "metadata": {"user_id": "u-1"},
        "inference_geo": "eu",
        "extra_body": {"x": 1},
    }
    assert summary_params(spec) == {"metadata": {"user_id": "u-1"}, "inference_geo": "eu"}
    assert summary_params({"provider": "scripted", "name": "demo", "max_tokens": 3}) == {}
