"""A schemathesis run over every operation of the real `agentrun api` process, with every
check it has (examples, coverage, fuzzing and stateful phases): no 5xx, every response as
documented (status, content type, headers, body), data the schema refuses refused, data
it allows accepted unless a documented rule between fields refuses it (the hooks module
says which), 405s with a true `Allow` header, auth ignored nowhere.

The seed is fixed so that CI is repeatable; run `schemathesis run` by hand (the README's
*Tests* shows the command) with other seeds and more examples to hunt further.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.e2e.processes import AGENTRUN, spawn, stop, wait_until
from tests.ports import free_port

KEY = "schemathesis-key"
SCHEMATHESIS = str(Path(sys.executable).parent / "schemathesis")
ROOT = Path(__file__).resolve().parents[2]


#: The operations in three runs of their own, each with its own server (the suite's
#: workers share them out; each well under the tests' time-out on a loaded machine): a
#: run's operations (their links — a run's id, its calls' — stay together for the
#: stateful phase), the agents' and the schedules' (the other large request bodies), and
#: every other one. Each operation is in exactly one (`test_the_shards_cover_every_...`).
SHARDS = {
    "runs": ["--include-path-regex", "^/v1/runs"],
    "agents-schedules": ["--include-path-regex", "^/v1/(agents|schedules)"],
    "rest": ["--exclude-path-regex", "^/v1/(runs|agents|schedules)"],
}


def test_the_shards_cover_every_operation_once() -> None:
    from app.main import create_app
    from tests.conftest import make_settings

    app = create_app(make_settings("sqlite://", api_keys=KEY))
    paths = list(app.openapi()["paths"])
    for path in paths:
        taken = [
            name
            for name, (flag, pattern) in SHARDS.items()
            if (re.search(pattern, path) is not None) == (flag == "--include-path-regex")
        ]
        assert len(taken) == 1, (path, taken)


@pytest.mark.starts_first  # (the suite's longest runs of their own)
@pytest.mark.parametrize("shard", list(SHARDS))
def test_every_operation_conforms_to_the_openapi_document(tmp_path: Path, shard: str) -> None:
    database = f"sqlite:///{tmp_path / 'api.db'}"
    env = {
        **os.environ,
        "AGENTRUN_DATABASE_URL": database,
        "AGENTRUN_API_KEYS": KEY,
        # Schemathesis sends wrong keys on purpose (ignored-auth check): not a brute force.
        "AGENTRUN_AUTH_FAILURE_LIMIT": "0",
    }
    subprocess.run([AGENTRUN, "migrate"], env=env, check=True, capture_output=True, timeout=60)
    port = free_port()
    api = spawn(
        ["api", "--port", str(port)],
        database,
        tmp_path / "api.log",
        AGENTRUN_API_KEYS=KEY,
        AGENTRUN_AUTH_FAILURE_LIMIT="0",
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: _up(base), 30, "the API to start")
        command = [
            SCHEMATHESIS, "run", f"{base}/openapi.json",
            "--header", f"Authorization: Bearer {KEY}",
            "--checks", "all",
            "--exclude-checks", "positive_data_acceptance",  # replaced by the hooks'
            "--max-examples", "25",
            "--seed", "20261130",
            "--workers", "1",
            "--no-color",
            *SHARDS[shard],
        ]  # fmt: skip
        run = subprocess.run(
            command,
            env={
                **env,
                "SCHEMATHESIS_HOOKS": "tests.api.schemathesis_hooks",
                "PYTHONPATH": str(ROOT),
            },
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        stop(api)
    report = run.stdout[-6000:]
    assert run.returncode == 0, report
    assert "Runtime Error" not in run.stdout, report
    log = (tmp_path / "api.log").read_text()
    assert "Exception in ASGI application" not in log, log[-4000:]


def _up(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False
