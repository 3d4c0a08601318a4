"""Reading `/metrics` in tests: a sample's value, and this process's counters before and
after (they are cumulative for the whole test session)."""

from __future__ import annotations

from prometheus_client import REGISTRY
from prometheus_client.parser import text_string_to_metric_families


def sample(text: str, name: str, **labels: str) -> float | None:
    """The value of sample `name` with exactly `labels` in an exposition, None if absent."""
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and s.labels == labels:
                return float(s.value)
    return None


def counted(name: str, **labels: str) -> float:
    """This process's current value of a kept metric's sample (0 before its first count)."""
    return REGISTRY.get_sample_value(name, labels) or 0.0
