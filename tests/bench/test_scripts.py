"""Every benchmark script runs, as a user runs it, at a tiny size: a script that crashes
or no longer prints its figures fails here, not on the day someone measures with it.

Scripts are found by their `if __name__ == "__main__":` (the rest of bench/ is library);
each needs an entry in TINY: its flags for a tiny run and the headings its output must
hold. A new script without one fails `test_every_script_has_a_tiny_run`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
#: Where the scripts and the processes they start keep their compiled modules (outside
#: the checkout; shared by runs and workers): most of a tiny run's CPU is importing the
#: app in each of its processes, and compiling it again each time is a tenth of that.
PYCACHE = Path(tempfile.gettempdir()) / "agentrun-bench-pycache"

#: Per script: the flags of a tiny run, and text its output must hold (the headings of
#: the figures it prints). PostgreSQL comes from AGENTRUN_TEST_DATABASE_URL (the scripts'
#: `--server` default); SQLite, where a script uses it, is a temporary file of its own.
TINY: dict[str, tuple[list[str], list[str]]] = {
    "budget_check.py": (
        ["--n", "200", "--repeat", "1"],
        ["per model call: old", "per create: checked_limits", "per lifecycle (1 create"],
    ),
    "cancel.py": (
        ["--cancels", "2", "--holds", "200"],
        ["postgres: 2 cancels", "sqlite: 2 cancels", "Lease.hold, a call nobody cancels"],
    ),
    "core.py": (
        ["--repeat", "1", "--number", "5"],
        ["| measurement | time | bytes |", "| tool round trip", "| from_json, 1000 history"],
    ),
    "fair_share.py": (
        ["--a", "40", "--b", "4", "--workers", "1", "--warmup", "4", "--window", "0.3"],
        ["X0 (runs/s finished before B queued)", "T_B measured", "B's share of claims"],
    ),
    "flow_control.py": (
        ["--runs", "3", "--workers", "1", "--slots", "2", "--rpm", "600", "--timeout", "60"],
        ["limit = quota {", "limit = 2.0 × quota {", "'429s': 0"],
    ),
    "http_api.py": (
        ["--runs", "10", "--repeat", "1", "--concurrency", "4", "--workers", "1"],
        ["| path (1 worker processes) |", "| service layer", "| HTTP, 1 API process"],
    ),
    "key_lookup.py": (
        ["--calls", "50", "--requests", "200", "--repeat", "1"],
        ["| measured | env key | database key", "`DbKeys.authenticate`", "`GET /v1/runs/{id}`"],
    ),
    "lifecycle.py": (
        ["--runs", "12", "--repeat", "1", "--workers", "1", "--resumes", "2", "--rounds", "2"],
        [
            "| direct SQL (6 commits, 8 clients) |",
            "| the service's own statements, issued directly (8 clients) |",
            "| service, 1 worker process(es) × 8 |",
            "| history messages | suspend (snapshot + write)",
        ],
    ),
    "providers.py": (
        ["--repeat", "1", "--messages", "10", "--calls", "2", "--number", "1"],
        ["encode µs", "decode ev/s", "bare POST ms"],
    ),
    "queue_lease.py": (
        ["--runs", "4", "--executors", "2", "--limit", "2", "--samples", "2"],
        ["8 calls of 4 runs leased and answered", "a waiting lease answered after"],
    ),
    "retention_load.py": (
        ["--kept", "20", "--day", "20", "--suspended", "4", "--queued", "2", "--batch", "5"]
        + ["--warm", "0.2", "--idle", "0.3"],
        ["seeded 46 runs", "swept 20 runs in", "phase  requests", "p95 during the sweep"],
    ),
    "statement_cpu.py": (
        ["--n", "10", "--repeat", "1"],
        ["client CPU µs", "hot read, now (borrowed from the engine)", "SQLAlchemy transaction"],
    ),
    "statement_lab.py": (
        ["--repeat", "1", "--lifecycles", "8", "--executions", "10"],
        ["| variant | lifecycles/s", "| as recorded |", "| submit, refused |"],
    ),
    "stored_data.py": (
        ["--runs", "4", "--suspended", "2", "--queued", "2", "--templates", "1"]
        + ["--sequential", "1", "--each", "1", "--workers", "1", "--without-backlog"],
        ["empty: folded", "seeded: verified", "| request | empty p50", "`GET /v1/usage`"],
    ),
    "wal_by_relation.py": (["--runs", "1"], ["| relation and record |", "Transaction/COMMIT"]),
    "webhooks.py": (
        ["--runs", "3", "--paced", "2", "--subscribers", "2", "--workers", "1"],
        ["| webhook deliveries/s", "| suspend commit → executor", "| SSE: 2 subscribers"],
    ),
}


def scripts() -> list[str]:
    """bench/'s scripts: the files a user runs (those with a main)."""
    return sorted(
        p.name for p in BENCH.glob("*.py") if 'if __name__ == "__main__":' in p.read_text()
    )


def test_every_script_has_a_tiny_run() -> None:
    assert scripts(), "no script found in bench/"
    missing = sorted(set(scripts()) - set(TINY))
    assert not missing, f"bench scripts without an entry in TINY: {missing}"
    stale = sorted(set(TINY) - set(scripts()))
    assert not stale, f"TINY names scripts bench/ no longer has: {stale}"


@pytest.mark.parametrize("script", scripts())
def test_script_prints_its_figures(script: str, postgres_server: str, tmp_path: Path) -> None:
    assert script in TINY, f"bench/{script} has no tiny run in TINY"
    flags, headings = TINY[script]
    env = {
        **os.environ,
        "AGENTRUN_TEST_DATABASE_URL": postgres_server,
        # (this checkout's `app` for the script and the processes it starts)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "TMPDIR": str(tmp_path),
        "PYTHONUNBUFFERED": "1",
        "PYTHONDONTWRITEBYTECODE": "",
        "PYTHONPYCACHEPREFIX": str(PYCACHE),
    }
    done = subprocess.run(
        [sys.executable, f"bench/{script}", *flags],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"bench/{script} exited {done.returncode}:\n{output[-4000:]}"
    missing = [h for h in headings if h not in done.stdout]
    assert not missing, f"bench/{script} did not print {missing}:\n{done.stdout[-4000:]}"
