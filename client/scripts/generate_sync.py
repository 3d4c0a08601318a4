"""Generate the sync client, `agentrun_client/_sync.py`, from the async one, `_async.py`
(and each other module of `MODULES`, e.g. `_async_runs.py` → `_sync_runs.py`), with
unasync (as httpcore does): `async`/`await` dropped, async names mapped to their sync
twins (`REPLACEMENTS`), then ruff's import sorting and formatting, under a header that says
so. What cannot be generated that way goes through `_async_shims.py` / `_sync_shims.py`.

    python client/scripts/generate_sync.py           # write them (`make sync-client`)
    python client/scripts/generate_sync.py --check   # exit 1 if one is stale

`--package DIR` works on another copy of the package (the staleness test uses it).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import unasync

PACKAGE = Path(__file__).resolve().parents[1] / "agentrun_client"
#: Where ruff finds the project's settings (line length, import sections).
ROOT = Path(__file__).resolve().parents[2]

#: Beyond unasync's own (`__aenter__`, `AsyncIterator`, ...; `AsyncX` becomes `SyncX`).
REPLACEMENTS = {
    "_async_shims": "_sync_shims",
    "_async_agents": "_sync_agents",
    "_async_approvals": "_sync_approvals",
    "_async_runs": "_sync_runs",
    "_async_schedules": "_sync_schedules",
    "AsyncAgents": "Agents",
    "AsyncApprovals": "Approvals",
    "AsyncRequester": "Requester",
    "AsyncRunsClient": "RunsClient",
    "AsyncClient": "Client",  # ours and httpx's
    "AsyncBaseTransport": "BaseTransport",
    "AsyncRuns": "Runs",
    "AsyncRunWaiter": "RunWaiter",
    "AsyncSchedules": "Schedules",
    "AsyncQueues": "Queues",
    "AsyncQueueExecutor": "QueueExecutor",
    "aclose": "close",
    "aread": "read",
    "aiter_lines": "iter_lines",
}

#: Each async source and the sync module generated from it.
MODULES = {
    "_async.py": "_sync.py",
    "_async_agents.py": "_sync_agents.py",
    "_async_approvals.py": "_sync_approvals.py",
    "_async_runs.py": "_sync_runs.py",
    "_async_schedules.py": "_sync_schedules.py",
}


def header(source: str) -> str:
    return (
        f"# Generated from {source} by client/scripts/generate_sync.py (unasync): do not edit;\n"
        f"# edit {source} and run `make sync-client`.\n"
    )


def generate(package: Path = PACKAGE, source_name: str = "_async.py") -> str:
    """The text the sync twin of `package`'s `source_name` should have."""
    target_name = MODULES[source_name]
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / source_name
        shutil.copyfile(package / source_name, source)
        rule = unasync.Rule(source_name, target_name, additional_replacements=REPLACEMENTS)
        unasync.unasync_files([str(source)], rules=[rule])
        text = (Path(tmp) / target_name).read_text(encoding="utf-8")
    name = str(ROOT / "client" / "agentrun_client" / target_name)  # (ruff's settings for it)
    # Imports sorted again (names changed); `for x in y: yield x`, which an async generator
    # needs, as `yield from y` (UP028; "unsafe" only for generators that are sent values).
    fixes = ["check", "--fix-only", "--unsafe-fixes", "--select", "I,UP028"]
    for args in (fixes, ["format"]):
        text = _ruff([*args, "--stdin-filename", name, "-"], text)
    return header(source_name) + text


def _ruff(args: list[str], text: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ruff", *args],
        input=text,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"ruff {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if one is stale")
    parser.add_argument("--package", type=Path, default=PACKAGE, help="the package directory")
    args = parser.parse_args(argv)
    stale = 0
    for source_name, target_name in MODULES.items():
        target = args.package / target_name
        text = generate(args.package, source_name)
        current = target.read_text(encoding="utf-8") if target.exists() else ""
        if current == text:
            continue
        if args.check:
            print(f"{target} is stale: run `make sync-client`", file=sys.stderr)
            stale = 1
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
