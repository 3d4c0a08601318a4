"""A process with a bad provider profile refuses to start, naming the entry (real
`agentrun` processes: the check runs before anything touches the database)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AGENTRUN = str(Path(sys.executable).with_name("agentrun"))
BAD = {"profiles": {"local-vllm": {"limits": {"requests_per_minute": 0}}}}
UNSET_KEY = {
    "profiles": {
        "local-vllm": {
            "wire": "openai_chat",
            "base_url": "http://127.0.0.1:8000/v1",
            "api_key_env": "AGENTRUN_TEST_UNSET_KEY",
        }
    }
}


def start(command: str, document: dict[str, object]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTRUN_")}
    env["AGENTRUN_DATABASE_URL"] = "postgresql://nobody@127.0.0.1:1/none"  # (never reached)
    env["AGENTRUN_PROVIDERS"] = json.dumps(document)
    args = [AGENTRUN, command, "--port", "1"] if command != "worker" else [AGENTRUN, command]
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", ["serve", "api", "worker"])
def test_a_bad_entry_refuses_to_start_naming_it(command: str) -> None:
    done = start(command, BAD)
    assert done.returncode == 2, done.stderr
    assert "refusing to start: provider profiles: AGENTRUN_PROVIDERS: " in done.stderr
    assert "profiles.local-vllm.limits.requests_per_minute: " in done.stderr


def test_an_unset_key_variable_refuses_a_worker() -> None:
    done = start("worker", UNSET_KEY)
    assert done.returncode == 2
    assert (
        "profiles.local-vllm.api_key_env: the environment variable "
        "AGENTRUN_TEST_UNSET_KEY is not set"
    ) in done.stderr
