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

from tests.e2e.processes import agentrun_serve as serve

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
    """`agentrun serve` for the package's programs (`tests.e2e.processes.agentrun_serve`)."""
    with serve(tmp, KEY, SECRET) as env:
        yield env


def environment(service: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **service}
