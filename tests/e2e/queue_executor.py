"""A queue executor process for the end-to-end test: `python -m tests.e2e.queue_executor
QUEUE JOURNAL` serves one slow tool from queue QUEUE with a short lease, and appends a
line to JOURNAL when a call starts and when it ends (the test kills it in between). The
tool holds its call until the test has made the file `released(JOURNAL)`, not for a
time that might run out under load before the test kills."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from agentrun_client import Client, ToolCallContext, ToolRegistry

#: How long a call waits at most for the release (the test fails long before).
HOLD_SECONDS = 60.0


def released(journal: Path) -> Path:
    """The file whose existence lets the slow tool's calls end."""
    return journal.with_name(journal.name + ".release")


def main(queue: str, journal: Path) -> None:
    registry = ToolRegistry()

    @registry.tool
    def slow_add(a: float, b: float, ctx: ToolCallContext) -> float:
        """Add two numbers, slowly."""
        note(journal, "start", ctx)
        deadline = time.monotonic() + HOLD_SECONDS
        while not released(journal).exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        note(journal, "end", ctx)
        return a + b

    with Client() as client:  # AGENTRUN_BASE_URL, AGENTRUN_API_KEY
        note(journal, "ready", None)
        client.serve_queue(registry, queue=queue, concurrency=2, lease_seconds=1.5, wait=10)
    note(journal, "stopped", None)


def note(journal: Path, what: str, ctx: ToolCallContext | None) -> None:
    call = f" {ctx.run_id} {ctx.call_id} {ctx.attempt}" if ctx is not None else ""
    with journal.open("a") as f:
        f.write(f"{time.time():.3f} {os.getpid()} {what}{call}\n")


if __name__ == "__main__":
    main(sys.argv[1], Path(sys.argv[2]))
