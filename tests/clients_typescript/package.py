"""The TypeScript client's package (clients/typescript) as the tests use it: its
dependencies must be installed (`npm ci`, which `make test` and `.ci/run` do; the tests
fail, never skip, without them), its dist/ is built when older than its sources, and
`agentrun serve` runs for the node tests and the browser."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.e2e.processes import spawn, stop, wait_until
from tests.mocks.uvicorn_thread import free_port

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
KEY = "ts-client-key"
SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


def node() -> str:
    found = shutil.which("node")
    assert found is not None, "node (20 or later) is needed for the TypeScript client's tests"
    return found


def require_dependencies() -> None:
    """Fail loudly when the package's node_modules is missing."""
    for name in (
        "openapi-typescript",
        "openapi-fetch",
        "standardwebhooks",
        "typescript",
        "esbuild",
    ):
        assert (PACKAGE / "node_modules" / name).is_dir(), (
            f"{PACKAGE}/node_modules/{name} is missing: run `npm ci --prefix {PACKAGE}` "
            "(`make test` and `.ci/run` do)"
        )


def _newest_source() -> float:
    files = [*PACKAGE.joinpath("src").rglob("*.ts"), PACKAGE / "scripts" / "build.mjs"]
    return max(p.stat().st_mtime for p in files)


def build() -> None:
    """dist/ as the sources are now (built under a lock: test processes run in parallel)."""
    require_dependencies()
    marker = PACKAGE / "dist" / "index.js"
    with (PACKAGE / "node_modules" / ".agentrun-build.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists() and marker.stat().st_mtime >= _newest_source():
            return
        done = subprocess.run(
            [node(), "scripts/build.mjs"], cwd=PACKAGE, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"npm run build failed:\n{done.stdout}{done.stderr}"


@contextmanager
def agentrun_serve(tmp: Path) -> Iterator[dict[str, str]]:
    """`agentrun serve` on a SQLite file, with a webhook secret and loopback deliveries
    allowed; the environment a program needs to use it."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {
        "AGENTRUN_API_KEYS": KEY,
        "AGENTRUN_PUBLIC_URL": base,
        "AGENTRUN_WEBHOOK_SECRET": SECRET,
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
            "AGENTRUN_API_KEY": KEY,
            "AGENTRUN_WEBHOOK_SECRET": SECRET,
        }
    finally:
        assert stop(proc) == 0


def environment(service: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **service}
