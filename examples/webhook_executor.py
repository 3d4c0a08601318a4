"""The webhook executor in a FastAPI app: the service POSTs a signed `run.requires_action`
to it, the app acknowledges at once, executes the tools and answers through the run's
callback URL. Nothing polls.

The service must share the app's secret and be allowed to call a loopback address:

    AGENTRUN_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw \\
    AGENTRUN_WEBHOOK_ALLOW_PRIVATE=true make run
    AGENTRUN_WEBHOOK_SECRET=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw \\
    python examples/webhook_executor.py

This serves the app on 127.0.0.1:$PORT (default 8001), creates one run whose webhook is
the app, waits for it to end and stops. In production serve `app` as usual
(`uvicorn examples.webhook_executor:app`) and create runs from anywhere with
`"webhook": {"url": "https://<host>/agentrun/"}`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI

from agentrun_client import TERMINAL, AsyncClient, ToolCallContext, ToolRegistry
from agentrun_client.webhooks import executor_app

registry = ToolRegistry()


@registry.tool
async def add(a: float, b: float, ctx: ToolCallContext) -> float:
    """Add two numbers (`ctx.call_id` is the idempotency key of a call with effects)."""
    print(f"  executing {ctx.call_id} of {ctx.run_id}: add({a}, {b})", flush=True)
    return a + b


executor = executor_app(registry, secret=os.environ["AGENTRUN_WEBHOOK_SECRET"])


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    await executor.aclose()  # lets executions in flight finish


app = FastAPI(lifespan=lifespan)
app.mount("/agentrun", executor)


@app.get("/")
async def home() -> dict[str, str]:
    return {"service": "an app with an agentrun tool executor at /agentrun/"}


MODEL = {
    "provider": "scripted",
    "name": "demo",
    "script": [
        {"tool_calls": [{"name": "add", "arguments": {"a": 20, "b": 22}}]},
        {"text": "20+22=42"},
    ],
}


async def main() -> None:
    port = int(os.environ.get("PORT", "8001"))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.02)
    try:
        async with AsyncClient() as client:
            run = await client.runs.create(
                prompt="What is 20+22?",
                model=MODEL,
                tools=registry,
                webhook=f"http://127.0.0.1:{port}/agentrun/",
            )
            run = await client.runs.wait(run.id, TERMINAL, timeout=60)
            print(f"{run.id} {run.status}: {run.output}")
    finally:
        server.should_exit = True
        await serving


if __name__ == "__main__":
    asyncio.run(main())
