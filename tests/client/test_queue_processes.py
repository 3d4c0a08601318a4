"""The queue executor example as a program of its own against a real `agentrun serve`
(the fixture of tests/client/test_processes.py)."""

from __future__ import annotations

from tests.client.test_processes import example, service

__all__ = ["service"]  # (the module-scoped `agentrun serve` fixture)


def test_queue_executor_example(service: dict[str, str]) -> None:
    out = example("queue_executor.py", service)
    assert "add(20.0, 22.0) = 42.0" in out and "add(1.0, 1.0) = 2.0" in out
    assert "attempt 1]" in out
    assert " completed: 20+22=42 and 1+1=2" in out
