"""Real `agentrun` processes for the end-to-end tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

AGENTRUN = str(Path(sys.executable).parent / "agentrun")


def spawn(args: list[str], database_url: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
    environment = {
        **os.environ,
        "AGENTRUN_DATABASE_URL": database_url,
        "AGENTRUN_LEASE_SECONDS": "2",
        "AGENTRUN_REAP_INTERVAL": "0.2",
        "AGENTRUN_POLL_INTERVAL": "0.05",
        **env,
    }
    handle = log.open("ab")
    return subprocess.Popen([AGENTRUN, *args], env=environment, stdout=handle, stderr=handle)


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 30) -> int:
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"process {proc.args} did not stop on {sig}") from None


def api_ready(client: httpx.Client) -> bool:
    """Whether the API behind `client` answers `/readyz` with 200 (not yet: False)."""
    try:
        return client.get("/readyz").status_code == 200
    except httpx.TransportError:
        return False


def wait_until(predicate: object, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
