"""Budgets from the client and the command line, against a real server (a loopback port,
a worker of its own): a run that hits its limit is returned by `client.run` for a person,
`runs.raise_limits` (and `agentrun runs limits`) resume it."""

from __future__ import annotations

from agentrun_client import RaiseLimits, RunStatus, ToolRegistry
from tests.client.conftest import Live, scripted
from tests.client.test_cli import cli


def registry() -> ToolRegistry:
    tools = ToolRegistry()

    @tools.tool
    def add(a: float, b: float) -> float:
        """Add two numbers."""
        return a + b

    return tools


ROUNDS = [
    {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]},
    {"tool_calls": [{"name": "add", "arguments": {"a": 3, "b": 4}}]},
    {"text": "3 and 7"},
]


def test_a_run_on_its_budget_is_handed_back_and_raising_the_limit_resumes_it(
    live: Live,
) -> None:
    tools = registry()
    with live.client() as client:
        run = client.run(
            "add twice", tools=tools, model=scripted(*ROUNDS), limits={"max_model_calls": 2}
        )
        assert run.status is RunStatus.REQUIRES_ACTION
        action = run.required_action
        assert isinstance(action, RaiseLimits)
        assert (action.limit, action.scope, action.spent, action.allowed) == (
            "max_model_calls",
            "run",
            2,
            2,
        )
        assert run.limits == {"max_model_calls": 2} and run.usage is not None
        assert run.usage.model_calls == 2

        raised = client.runs.raise_limits(run.id, max_model_calls=3)
        assert raised.status is RunStatus.QUEUED and raised.limits == {"max_model_calls": 3}
        done = client.runs.wait(run.id, [RunStatus.COMPLETED], timeout=30)
        assert done.output == "3 and 7"


def test_agentrun_runs_limits(live: Live) -> None:
    with live.client() as client:
        run = client.runs.create(
            prompt="hi", model=scripted({"text": "hi"}), limits={"max_total_tokens": 5}
        )
        stopped = client.runs.wait(run.id, timeout=30)
        assert isinstance(stopped.required_action, RaiseLimits)
    shown = cli(live, "runs", "get", run.id)
    assert "run limit max_total_tokens" in shown.out
    assert f"runs limits {run.id} --max-total-tokens N" in shown.out
    refused = cli(live, "runs", "limits", run.id, "--max-total-tokens", "lots")
    assert refused.code == 2
    done = cli(live, "runs", "limits", run.id, "--max-total-tokens", "none", "--json")
    assert done.code == 0, done.err
    assert done.json()["limits"] is None and done.json()["status"] == "queued"
    with live.client() as client:
        assert client.runs.wait(run.id, [RunStatus.COMPLETED], timeout=30).output == "hi"
