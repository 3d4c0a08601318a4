"""The queue executor: runs name a tool-call queue (`tool_queue`), and executor processes
that have no public address lease the queue's calls from the API, run them, and answer.
Start as many executors as you like, anywhere; a call whose executor dies is leased again
by another (at least once: the call id is the idempotency key).

    make run                                # the service, in another terminal
    python examples/queue_executor.py      # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed

This program does both sides for the demonstration: it serves the queue `math` in a
thread (what a long-lived executor process does with `client.serve_queue(...)`), then
creates a run naming the queue and waits for it to finish.
"""

from __future__ import annotations

import threading

from agentrun_client import TERMINAL, Client, QueueExecutor, ToolCallContext, ToolRegistry

registry = ToolRegistry(max_concurrency=4)


@registry.tool(timeout=30)
def add(a: float, b: float, ctx: ToolCallContext) -> float:
    """Add two numbers.

    Args:
        a: the first addend
        b: the second addend
    """
    # ctx.call_id is the same each time this call is delivered: an idempotency key.
    print(f"  add({a}, {b}) = {a + b}  [call {ctx.call_id}, attempt {ctx.attempt}]", flush=True)
    return a + b


MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 20, "b": 22}},
                {"name": "add", "arguments": {"a": 1, "b": 1}},
            ]
        },
        {"text": "20+22=42 and 1+1=2"},
    ],
}


def main() -> None:
    with Client() as client:
        # The executor side (a process of its own in production: `client.serve_queue(
        # registry, queue="math")` blocks until SIGTERM, then finishes what it holds).
        executor = QueueExecutor(client, registry, queue="math", concurrency=4, wait=10)
        serving = threading.Thread(target=executor.run, kwargs={"handle_signals": False})
        serving.start()
        try:
            # The side that starts work: any program, with no executor of its own.
            run = client.runs.create(
                prompt="What are 20+22 and 1+1?", model=MODEL, tools=registry, tool_queue="math"
            )
            run = client.runs.wait(run.id, TERMINAL, timeout=60)
            print(f"{run.id} {run.status}: {run.output}")
        finally:
            executor.stop()
            serving.join()


if __name__ == "__main__":
    main()
