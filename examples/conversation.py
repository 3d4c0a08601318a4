"""A continued conversation: a second run continues the first (`previous_run_id`): it
starts from the first run's whole conversation and inherits its preamble (not sent
again); then the conversation is read back a page at a time.

    make run                                # the service, in another terminal
    python examples/conversation.py         # AGENTRUN_BASE_URL / AGENTRUN_API_KEY if needed

The model is the deterministic `scripted` provider: each run gets a script of its own
(`model` is inherited too unless given); put `{"provider": "openai", "name": "gpt-4o-mini"}`
in the first run for a real one and leave it out of the second.
"""

from __future__ import annotations

from typing import Any

from agentrun_client import Client, ConversationMessage, ToolRegistry

registry = ToolRegistry()


@registry.tool(timeout=5)
def add(a: float, b: float) -> float:
    """Add two numbers.

    Args:
        a: the first addend
        b: the second addend
    """
    print(f"  add({a}, {b}) = {a + b}", flush=True)
    return a + b


def scripted(a: float, b: float, answer: str) -> dict[str, Any]:
    """A model that calls `add(a, b)` once, then answers."""
    call = {"name": "add", "arguments": {"a": a, "b": b}}
    return {
        "provider": "scripted",
        "name": "demo",
        "script": [{"tool_calls": [call]}, {"text": answer}],
    }


def describe(entry: ConversationMessage) -> str:
    message = entry.message
    if isinstance(message.content, str):
        text = message.content
    else:
        parts = []
        for item in message.content:
            if item["type"] == "text":
                parts.append(item["text"])
            elif item["type"] == "toolcall":
                function = item["function"]
                parts.append(f"[calls {function['name']}({function['arguments']})]")
            elif item["type"] == "toolresult":  # its content: `text` or `json` items
                result = item["content"][0]
                parts.append(f"[{item['name']} returned {result.get('text', result.get('value'))}]")
        text = " ".join(parts)
    origin = "history" if entry.from_history else "own"
    return f"  {entry.index:2} {origin:7} {message.role:9} {text}"


def main() -> None:
    with Client() as client:
        first = client.run(
            "What is 2+3?",
            tools=registry,
            model=scripted(2, 3, "2+3=5"),
            preamble="You do arithmetic with the add tool.",
            timeout=60,
        )
        print(f"first  {first.id} {first.status}: {first.output}")
        second = client.run(
            "Now add 10 to that.",
            tools=registry,  # executed here, so sent again (else inherited too)
            previous_run_id=first.id,
            model=scripted(5, 10, "5+10=15"),
            timeout=60,
        )
        print(f"second {second.id} {second.status}: {second.output}")
        print(f"conversation {second.conversation_id}, continues {second.previous_run_id}")
        for entry in client.runs.messages(second.id, page_size=3):
            print(describe(entry))


if __name__ == "__main__":
    main()
