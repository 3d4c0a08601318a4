"""An OpenAI-shaped provider on 127.0.0.1 that enforces a quota, as a hosted one does.

`POST /v1/chat/completions` answers a short text while the caller stays within R requests
and T tokens per minute (token buckets holding a minute's worth, or `burst_seconds`'
worth, refilled continuously;
a call is charged `prompt_tokens + min(max_tokens, completion)` of its fixed usage when
it arrives), else 429 with `x-ratelimit-limit-*`, `-remaining-*`, `-reset-*` and
`retry-after`, like OpenAI's. It counts its answers and its 429s (and when each 429 was
sent), for the flow-control bench (`bench/flow_control.py`) and tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.mocks.uvicorn_thread import serve_in_thread

PROMPT_TOKENS = 10
COMPLETION_TOKENS = 6


class Bucket:
    """`per_minute` units, `burst_seconds`' worth at most (a minute's), refilled
    continuously."""

    def __init__(self, per_minute: float, burst_seconds: float = 60.0) -> None:
        self.per_minute = per_minute
        self.capacity = per_minute * burst_seconds / 60
        self.level = self.capacity
        self.at = time.monotonic()

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.at) * self.per_minute / 60)
        self.at = now

    def wait(self, cost: float) -> float:
        """Seconds until `cost` fits (0: it does)."""
        return max(0.0, (cost - self.level) * 60 / self.per_minute)


class QuotaProvider:
    def __init__(
        self, requests_per_minute: float, tokens_per_minute: float, burst_seconds: float = 60.0
    ) -> None:
        self.requests = Bucket(requests_per_minute, burst_seconds)
        self.tokens = Bucket(tokens_per_minute, burst_seconds)
        self._lock = threading.Lock()
        self.answered = 0
        self.answered_at: list[float] = []  # monotonic times of the answers
        self.base_url = ""  # (set once served)
        self.rejected: list[float] = []  # monotonic times of the 429s
        self.app = Starlette(routes=[Route("/v1/chat/completions", self._chat, methods=["POST"])])

    async def _chat(self, request: Request) -> JSONResponse:
        body: dict[str, Any] = await request.json()
        cap = body.get("max_completion_tokens") or body.get("max_tokens") or COMPLETION_TOKENS
        completion = min(int(cap), COMPLETION_TOKENS)
        cost = PROMPT_TOKENS + completion
        with self._lock:
            now = time.monotonic()
            self.requests.refill(now)
            self.tokens.refill(now)
            wait = max(self.requests.wait(1), self.tokens.wait(cost))
            if wait == 0:
                self.requests.level -= 1
                self.tokens.level -= cost
                self.answered += 1
                self.answered_at.append(now)
            else:
                self.rejected.append(now)
            headers = self._headers(wait)
        if wait > 0:
            error = {"message": "Rate limit reached", "type": "requests", "code": "rate_limit"}
            return JSONResponse({"error": error}, status_code=429, headers=headers)
        return JSONResponse(
            {
                "id": f"chatcmpl-{self.answered}",
                "object": "chat.completion",
                "model": body.get("model", "m"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "ok"},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": PROMPT_TOKENS,
                    "completion_tokens": completion,
                    "total_tokens": cost,
                },
            },
            headers=headers,
        )

    def _headers(self, wait: float) -> dict[str, str]:
        r, t = self.requests, self.tokens
        out = {
            "x-ratelimit-limit-requests": str(int(r.per_minute)),
            "x-ratelimit-limit-tokens": str(int(t.per_minute)),
            "x-ratelimit-remaining-requests": str(max(0, int(r.level))),
            "x-ratelimit-remaining-tokens": str(max(0, int(t.level))),
            "x-ratelimit-reset-requests": f"{r.wait(1):.3f}s",
            "x-ratelimit-reset-tokens": f"{t.wait(t.capacity):.3f}s",
        }
        if wait > 0:
            out["retry-after"] = f"{max(1, round(wait + 0.5))}"
            out["retry-after-ms"] = str(int(wait * 1000) + 1)
        return out

    def per_minute_429s(self, start: float) -> list[int]:
        """The 429s of each minute since `start` (monotonic)."""
        counts: list[int] = []
        for at in self.rejected:
            i = int((at - start) // 60)
            counts.extend([0] * (i + 1 - len(counts)))
            counts[i] += 1
        return counts


@contextmanager
def quota_server(
    requests_per_minute: float, tokens_per_minute: float, burst_seconds: float = 60.0
) -> Iterator[QuotaProvider]:
    """A `QuotaProvider` served on 127.0.0.1; its `base_url` (…/v1) set."""
    provider = QuotaProvider(requests_per_minute, tokens_per_minute, burst_seconds)
    with serve_in_thread(provider.app) as url:
        provider.base_url = f"{url}/v1"
        yield provider
