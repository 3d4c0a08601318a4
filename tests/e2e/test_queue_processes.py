"""The tool-call queue with real processes on PostgreSQL: `agentrun api`, `agentrun
worker`, and two executor processes (`tests.e2e.queue_executor`, a `QueueExecutor` with a
1.5 s lease) serving a slow tool (it holds the call until the test releases it). The
executor that starts the call is killed with SIGKILL mid-call; its lease lapses, the
other executor gets the call (same call id, attempt 2), and the run completes. The
survivor then stops cleanly on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.e2e.processes import spawn, stop, wait_until
from tests.e2e.queue_executor import released
from tests.ports import free_port

KEY = "queue-e2e"
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = [
    {"tool_calls": [{"name": "slow_add", "arguments": {"a": 20, "b": 22}}]},
    {"text": "20+22=42"},
]
TOOL = {
    "name": "slow_add",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
}


def executor(queue: str, journal: Path, base: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AGENTRUN_BASE_URL": base,
        "AGENTRUN_API_KEY": KEY,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "client")]),
    }
    handle = log.open("ab")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.e2e.queue_executor", queue, str(journal)],
        env=env,
        cwd=ROOT,
        stdout=handle,
        stderr=handle,
    )


def lines(journal: Path, what: str) -> list[list[str]]:
    if not journal.exists():
        return []
    return [f for f in (line.split() for line in journal.read_text().splitlines()) if f[2] == what]


def test_a_call_of_a_killed_executor_is_run_again_by_the_other(
    clean_postgres: str, tmp_path: Path
) -> None:
    started = time.monotonic()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"AGENTRUN_API_KEYS": KEY, "AGENTRUN_PUBLIC_URL": base}
    api = spawn(["api", "--port", str(port)], clean_postgres, tmp_path / "api.log", **env)
    worker = spawn(["worker"], clean_postgres, tmp_path / "worker.log", **env)
    journal = tmp_path / "journal"
    executors: list[subprocess.Popen[bytes]] = []
    headers = {"Authorization": f"Bearer {KEY}"}
    try:
        wait_until(lambda: ready(base), 30, "the API to start")
        executors += [executor("slow", journal, base, tmp_path / f"x{i}.log") for i in range(2)]
        by_pid = {str(p.pid): p for p in executors}
        wait_until(lambda: len(lines(journal, "ready")) == 2, 30, "both executors to start")
        wait_until(lambda: "worker started" in (tmp_path / "worker.log").read_text(), 30, "worker")
        body = {
            "prompt": "add 20 and 22",
            "model": {"provider": "scripted", "name": "demo", "script": SCRIPT},
            "tools": [TOOL],
            "tool_queue": "slow",
        }
        run = httpx.post(f"{base}/v1/runs", json=body, headers=headers).json()
        wait_until(lambda: lines(journal, "start"), 30, "an executor to start the call")
        (first,) = lines(journal, "start")
        victim = by_pid[first[1]]
        victim.send_signal(signal.SIGKILL)  # mid-call: its tool holds the call
        killed_at = time.time()
        assert victim.wait(10) == -signal.SIGKILL
        released(journal).touch()  # the call's next attempt may end
        survivor = next(p for p in executors if p is not victim)
        done = httpx.get(
            f"{base}/v1/runs/{run['id']}/wait",
            params={"status": "completed", "timeout": 30},
            headers=headers,
            timeout=40,
        ).json()
        events = httpx.get(f"{base}/v1/runs/{run['id']}/events", headers=headers).json()["data"]
        assert stop(survivor) == 0, "SIGTERM ends an executor cleanly"
    finally:
        for p in executors:
            if p.poll() is None:
                p.kill()
                p.wait()
        codes = [stop(worker), stop(api)]
    assert codes == [0, 0]
    assert done["status"] == "completed" and done["output"] == "20+22=42", done
    starts = lines(journal, "start")
    assert [s[5] for s in starts] == ["1", "2"], starts  # the call's attempts
    assert starts[0][4] == starts[1][4], "the same call id both times"
    assert starts[0][1] != starts[1][1] == str(survivor.pid)
    assert [e[1] for e in lines(journal, "end")] == [str(survivor.pid)]
    assert lines(journal, "stopped") and lines(journal, "stopped")[0][1] == str(survivor.pid)
    kinds = [e["type"] for e in events]
    assert kinds.count("tool_call.leased") == 2 and kinds.count("tool_call.lease_expired") == 1
    assert kinds.count("tool_result.received") == 1
    reoffered = float(starts[1][0]) - killed_at
    print(f"re-offered {reoffered:.2f} s after SIGKILL (lease 1.5 s); whole test "
          f"{time.monotonic() - started:.1f} s")  # fmt: skip
    assert reoffered < 10


def ready(base: str) -> bool:
    try:
        return httpx.get(f"{base}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False
