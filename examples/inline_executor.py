"""The inline executor: `client.run(...)` creates a run with the registry's tools, executes
its tool calls in this process whenever it suspends, and returns the finished run.

    make run                                # the service, in another terminal
    python examples/inline_executor.py      # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed

The model is the deterministic `scripted` provider (it asks for `add` twice, then answers);
put `{"provider": "openai", "name": "gpt-4o-mini"}` there for a real one.
"""

from __future__ import annotations

from agentrun_client import Client, ToolRegistry

registry = ToolRegistry(max_concurrency=4)


@registry.tool(timeout=5)
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first addend
        b: the second addend
    """
    print(f"  add({a}, {b}) = {a + b}", flush=True)
    return a + b


MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [
        {
            "tool_calls": [
                {"name": "add", "arguments": {"a": 1, "b": 2}},
                {"name": "add", "arguments": {"a": 3, "b": 4}},
            ]
        },
        {"text": "1+2=3 and 3+4=7"},
    ],
}


def main() -> None:
    with Client() as client:
        run = client.run("What are 1+2 and 3+4?", tools=registry, model=MODEL, timeout=60)
        print(f"{run.id} {run.status}: {run.output}")


if __name__ == "__main__":
    main()
