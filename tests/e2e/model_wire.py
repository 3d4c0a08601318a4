"""Model calls of real processes over the real wire, to the in-process mock provider
(`tests.mocks.server`: point a process at it with `mock.env()`), answered from each
request as a scripted model would answer; unlike a scripted model's `delay_ms`, a call
the test can hold in flight (`mock.hold()`) until it has seen what it needs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.mocks.replies import MockToolCall, Reply
from tests.mocks.server import Responder

#: A run's model on the OpenAI Chat Completions wire (to the mock, once `mock.env()` is set).
MODEL = {"provider": "openai", "name": "demo"}


def agent(calls: Callable[[str], list[dict[str, Any]]], final: Callable[[str], str]) -> Responder:
    """A model that answers a run's first call with the tool calls `calls(prompt)` (name and
    arguments each), and the call after their results (or no calls) with `final(prompt)`."""

    def respond(body: Any) -> Reply:
        messages = body["messages"]
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        todo = [] if any(m["role"] == "tool" for m in messages) else calls(prompt)
        if not todo:
            return Reply(text=final(prompt))
        wanted = [MockToolCall(c["name"], json.dumps(c["arguments"])) for c in todo]
        return Reply(tool_calls=wanted)

    return respond


#: What `tests.helpers.run_body()`'s script answers: two `add` calls, then the sums.
RUN_BODY = agent(
    lambda _: [{"name": "add", "arguments": {"a": a, "b": b}} for a, b in ((1, 2), (3, 4))],
    lambda _: "the sums are 3 and 7",
)
