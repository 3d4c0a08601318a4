"""The sync client is generated from the async one (client/scripts/generate_sync.py, with
unasync): the committed `_sync.py` must be what the script makes from `_async.py` now."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "client" / "scripts" / "generate_sync.py"
PACKAGE = SCRIPT.parents[1] / "agentrun_client"


def check(package: Path) -> subprocess.CompletedProcess[str]:
    """The script's `--check` on `package` (it regenerates in a temporary directory)."""
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--package", str(package)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_committed_sync_client_is_generated_from_the_async_one() -> None:
    done = check(PACKAGE)
    assert done.returncode == 0, f"{done.stderr}(run `make sync-client` and commit _sync.py)"


def test_the_check_fails_when_the_async_source_changed_alone(tmp_path: Path) -> None:
    package = tmp_path / "agentrun_client"
    package.mkdir()
    # (Each generated module and its source.)
    for name in ("", "_agents", "_approvals", "_runs", "_schedules"):
        for side in ("_async", "_sync"):
            shutil.copyfile(PACKAGE / f"{side}{name}.py", package / f"{side}{name}.py")
    assert check(package).returncode == 0
    source = package / "_async.py"
    text = source.read_text(encoding="utf-8")
    edited = text.replace('"""Up to `limit` calls of', '"""At most `limit` calls of')
    assert edited != text
    source.write_text(edited, encoding="utf-8")
    stale = check(package)
    assert stale.returncode == 1 and "stale" in stale.stderr
    written = subprocess.run(
        [sys.executable, str(SCRIPT), "--package", str(package)], capture_output=True, timeout=120
    )
    assert written.returncode == 0
    assert '"""At most `limit` calls of' in (package / "_sync.py").read_text(encoding="utf-8")
    assert check(package).returncode == 0
