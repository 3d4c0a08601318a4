"""Real `agentrun` processes for the end-to-end tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def agentrun_serve(tmp: Path, key: str, secret: str) -> Iterator[dict[str, str]]:
    """`agentrun serve` on a SQLite file in `tmp`, with `key`, the webhook secret `secret`
    and loopback deliveries allowed, ready; the environment a program needs to use it
    (`AGENTRUN_BASE_URL`, `AGENTRUN_API_KEY`, `AGENTRUN_WEBHOOK_SECRET`). Required to stop
    cleanly."""
    from tests.ports import free_port

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "AGENTRUN_API_KEYS": key,
        "AGENTRUN_PUBLIC_URL": base,
        "AGENTRUN_WEBHOOK_SECRET": secret,
        "AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true",
        "AGENTRUN_POLL_INTERVAL": "0.02",
    }
    proc = spawn(
        ["serve", "--port", str(port)], f"sqlite:///{tmp}/agentrun.db", tmp / "serve.log", **env
    )

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/readyz").status_code == 200
        except httpx.TransportError:
            assert proc.poll() is None, (tmp / "serve.log").read_text()
            return False

    try:
        wait_until(ready, 30, "agentrun serve to be ready")
        yield {
            "AGENTRUN_BASE_URL": base,
            "AGENTRUN_API_KEY": key,
            "AGENTRUN_WEBHOOK_SECRET": secret,
        }
    finally:
        assert stop(proc) == 0
