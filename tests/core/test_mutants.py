"""Mutation check for `test_pinned_edges.py`: each planted bug must make its group fail.

Each mutant is a small, realistic edit of a core module (`run.py` unless it names another),
found by exact source text in a temporary copy of `app/core`; the group's tests then run in a
subprocess against that copy.
A missing or repeated anchor fails loudly: if the core is refactored, update the anchor (and
keep the mutant meaning the same bug) rather than deleting the check. A control run of the
same harness on an unmutated copy must pass, so a "kill" is never an environment failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PINNED = "tests/core/test_pinned_edges.py"
IGNORE = shutil.ignore_patterns("__pycache__", ".hypothesis", "*.pyc")


@dataclass(frozen=True)
class Mutant:
    group: str  # test-name prefix in test_pinned_edges.py
    anchor: str  # exact text in app/core/<module>, found exactly once
    replacement: str
    bug: str
    module: str = "run.py"


MUTANTS = [
    Mutant(
        "shared_id",
        "i.id == invalid_id",
        "i is next(c for c in items if isinstance(c, ToolCall) and c.id == invalid_id)",
        "only the first call with the invalid id gets the feedback",
        module="predicates.py",
    ),
    Mutant(
        "last_call",
        "self._state.completion_calls[-1].finish_reason",
        "self._state.completion_calls[0].finish_reason",
        "the truncation guard reads the first completion call",
    ),
    Mutant(
        "json_fields",
        "return not missing_required_fields(self._state.output_schema, value)",
        "return True  # any JSON document passes",
        "JSON text is accepted without checking the required fields",
    ),
    Mutant(
        "first_output",
        "output_calls[0]",
        "output_calls[-1]",
        "the last output-tool call wins",
    ),
]


def build_tree(dest: Path, mutant: Mutant | None) -> Path:
    """A copy of `app/core` (mutated) and `tests/core`, importable as `app` and `tests`."""
    (dest / "app").mkdir(parents=True)
    shutil.copy(ROOT / "app" / "__init__.py", dest / "app" / "__init__.py")
    shutil.copytree(ROOT / "app" / "core", dest / "app" / "core", ignore=IGNORE)
    (dest / "tests").mkdir()
    shutil.copy(ROOT / "tests" / "__init__.py", dest / "tests" / "__init__.py")
    shutil.copytree(ROOT / "tests" / "core", dest / "tests" / "core", ignore=IGNORE)
    (dest / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")  # rootdir = the copy
    if mutant is not None:
        target = dest / "app" / "core" / mutant.module
        source = target.read_text(encoding="utf-8")
        found = source.count(mutant.anchor)
        assert found == 1, (
            f"mutant {mutant.group}: anchor {mutant.anchor!r} occurs {found} times in "
            f"app/core/{mutant.module}; the core was refactored, update the anchor"
        )
        mutated = source.replace(mutant.anchor, mutant.replacement)
        compile(mutated, str(target), "exec")  # a mutant must be a bug, not a syntax error
        target.write_text(mutated, encoding="utf-8")
    return dest


def run_group(tree: Path, selection: str) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -x -q` on the copy; cwd and PYTHONPATH are the copy, so its `app`
    (not the worktree's) is imported. No plugin is needed, and skipping their autoload
    keeps each run under a second."""
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-x",
            "-q",
            "-rf",
            "-p",
            "no:cacheprovider",
            PINNED,
            "-k",
            selection,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_unmutated_copy_passes_every_group(tmp_path: Path) -> None:
    tree = build_tree(tmp_path / "control", None)
    result = run_group(tree, " or ".join(m.group for m in MUTANTS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert " passed" in result.stdout and "failed" not in result.stdout


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.group for m in MUTANTS])
def test_planted_bug_is_caught(mutant: Mutant, tmp_path: Path) -> None:
    tree = build_tree(tmp_path / mutant.group, mutant)
    result = run_group(tree, mutant.group)
    output = result.stdout + result.stderr
    # Exit code 1 means "tests failed" (2-4 would be an interrupted or broken session).
    assert result.returncode == 1, f"mutant survived ({mutant.bug}):\n{output}"
    assert f"FAILED {PINNED}::test_{mutant.group}" in result.stdout, output
