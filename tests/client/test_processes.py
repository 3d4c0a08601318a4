"""The client and the examples against a real `agentrun serve` process on 127.0.0.1 (its
own SQLite file, the `scripted` provider), each example run as a program of its own."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentrun_client import Client, NotFound, RunStatus, ToolRegistry
from tests.client.conftest import KEY, SECRET, scripted
from tests.e2e.processes import agentrun_serve
from tests.ports import free_port

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """`agentrun serve`; the environment a program needs to use it."""
    with agentrun_serve(tmp_path_factory.mktemp("serve"), KEY, SECRET) as env:
        yield env


def example(name: str, service: dict[str, str], **env: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        env={**os.environ, **service, **env},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_inline_executor_example(service: dict[str, str]) -> None:
    out = example("inline_executor.py", service)
    assert "add(1.0, 2.0) = 3.0" in out and "add(3.0, 4.0) = 7.0" in out
    assert " completed: 1+2=3 and 3+4=7" in out


def test_webhook_executor_example(service: dict[str, str]) -> None:
    out = example("webhook_executor.py", service, PORT=str(free_port()))
    assert "add(20.0, 22.0)" in out and " completed: 20+22=42" in out


def test_sync_client_against_the_process(service: dict[str, str]) -> None:
    registry = ToolRegistry()

    @registry.tool
    def add(a: float = 1, b: float = 1) -> float:
        return a + b

    with Client(service["AGENTRUN_BASE_URL"], KEY) as client:
        run = client.run("x", tools=registry, model=scripted(), timeout=30)
        assert run.status == RunStatus.COMPLETED and run.output == "Tool results: add: 2"
        assert run.id in {r.id for r in client.runs.list(status="completed", page_size=1)}
        assert client.runs.list_events(run.id)[-1].type == "run.completed"
        with pytest.raises(NotFound):
            client.runs.get("run_missing")


def test_conversation_example(service: dict[str, str]) -> None:
    out = example("conversation.py", service)
    assert "add(2.0, 3.0) = 5.0" in out and "add(5.0, 10.0) = 15.0" in out
    assert " completed: 2+3=5" in out and " completed: 5+10=15" in out
    lines = [
        line.split() for line in out.splitlines() if line.startswith("  ") and "(" not in line[:8]
    ]
    conversation = [line for line in lines if line and line[0].isdigit()]
    assert [c[1] for c in conversation] == ["history"] * 4 + ["own"] * 4
    assert conversation[0][2:] == ["user", "What", "is", "2+3?"]
    assert conversation[4][2:] == ["user", "Now", "add", "10", "to", "that."]
    assert conversation[-1][2:] == ["assistant", "5+10=15"]
    assert conversation[6][2:] == ["user", "[add", "returned", "15.0]"]


def script(name: str, service: dict[str, str], **env: str) -> str:
    done = subprocess.run(
        ["bash", str(EXAMPLES / name)],
        env={**os.environ, **service, **env},
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("jq", ["jq", "no-such-jq"])  # jq, or the python3 fallback
def test_http_session_example(service: dict[str, str], jq: str) -> None:
    if jq == "jq" and shutil.which("jq") is None:
        pytest.skip("jq not installed (the other case covers python3)")
    out = script("http_session.sh", service, JQ=jq).splitlines()
    assert out[0].startswith("run: run_")
    assert '"type": "submit_tool_results"' in "\n".join(out)
    assert out[-2:] == ["true", "1+2=3 and 3+4=7"]


@pytest.mark.parametrize(
    "command",
    [
        [str(Path(sys.executable).parent / "agentrun")],  # the service's CLI, delegating
        [sys.executable, "-m", "agentrun_client.cli"],  # the client's own
    ],
    ids=["agentrun", "agentrun-client"],
)
def test_cli_session_example(service: dict[str, str], command: list[str]) -> None:
    out = script("cli_session.sh", service, AGENTRUN=" ".join(command))
    assert "requires_action  (turn 1 of 8)" in out
    assert "accepted: call_1_0, call_1_1" in out
    assert "completed  (turn 2 of 8)" in out and "output:   1+2=3 and 3+4=7" in out
    assert out.rstrip().splitlines()[-1].split()[2] == "run.completed"


def test_mcp_executor_example(service: dict[str, str]) -> None:
    # mcp_executor.py starts "mcp_geo_server.py" (an MCP server) over stdio.
    assert (EXAMPLES / "mcp_geo_server.py").is_file()
    out = example("mcp_executor.py", service)
    assert "tools: shout, geo_capital" in out
    assert " completed: The capital of Kenya is NAIROBI." in out
