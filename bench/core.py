"""Core benchmark: one tool round trip, and to_json/from_json by history size.

Run: `make bench` (or `.venv/bin/python bench/core.py [--repeat 15] [--number 2000]`).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.core import (
    AgentRun,
    AssistantMessage,
    ModelTurn,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    UserMessage,
)

TOOLS = frozenset({"add"})
CALL = ToolCall.from_wire("call_1", "add", {"x": 1, "y": 2})
TOOL_TURN = ModelTurn((Text("let me add"), CALL), Usage(10, 5, 15), TOOLS, TOOLS, "msg_1")
RESULT = [ToolResult("call_1", "add", (Text("3"),))]


def round_trip() -> None:
    run = AgentRun("add 1 and 2", max_turns=2)
    run.next_step()
    run.model_response(TOOL_TURN)
    run.next_step()
    run.tool_results(RESULT)
    run.next_step()


def history(n: int) -> list[AssistantMessage | UserMessage]:
    messages: list[AssistantMessage | UserMessage] = []
    for i in range(n // 2):
        call = ToolCall.from_wire(f"call_{i}", "add", {"x": i, "note": "some argument text"})
        messages.append(AssistantMessage((Text(f"step {i}: calling add"), call), f"msg_{i}"))
        messages.append(UserMessage([ToolResult(call.id, "add", (Text(f"result {i}"),))]))
    return messages


def suspended_run(n: int) -> AgentRun:
    run = AgentRun("go", max_turns=3, history=history(n))
    run.next_step()
    run.model_response(TOOL_TURN)
    run.next_step()
    return run


def best_us(fn: object, number: int, repeat: int = 15) -> float:
    """Best of `repeat`, in CPU time of this process: steadier than wall time when other
    work shares the machine."""
    times = timeit.repeat(fn, number=number, repeat=repeat, timer=time.process_time)  # type: ignore[arg-type]
    return min(times) / number * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=15, help="timings of each; the best")
    parser.add_argument(
        "--number", type=int, default=2000, help="round trips per timing (to_json: a tenth)"
    )
    args = parser.parse_args()
    print("| measurement | time | bytes |")
    print("|---|---|---|")
    rt = best_us(round_trip, args.number, args.repeat)
    print(f"| tool round trip (5 calls, fresh run) | {rt:.1f} µs | |")
    for n in (10, 100, 1000):
        run = suspended_run(n)
        data = run.to_json()
        number = max(1, min(10, args.number), 10 * args.number // (n + 10))
        dump = best_us(run.to_json, number, args.repeat)
        load = best_us(lambda data=data: AgentRun.from_json(data), number, args.repeat)
        print(
            f"| to_json, {n} history messages | {dump:.0f} µs | {len(data.encode())} |\n"
            f"| from_json, {n} history messages | {load:.0f} µs | |"
        )


if __name__ == "__main__":
    main()
