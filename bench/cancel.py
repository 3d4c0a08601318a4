"""Cancel-to-abort: how soon a cancel closes the model connection of a streaming call.

Real processes, as deployed: `agentrun api` and `agentrun worker --concurrency 4` on a fresh
database (PostgreSQL: a NOTIFY on `agentrun_stop` reaches the worker's LISTEN; SQLite: the
worker's poll every `AGENTRUN_STOP_POLL_INTERVAL`), a provider on 127.0.0.1 that starts
each streamed answer (the first events, Anthropic's `message_start` with its usage) and
then holds it for 60 s (`tests/mocks/holding.py`), the OpenAI and Anthropic wires in turn.
Four streaming runs are in flight at a time; each is cancelled over HTTP in turn (after a
random pause of up to 0.3 s, so not in step with the SQLite poll), and the
time from the cancel's response to the moment the provider sees the worker close the
connection (the provider's side, the same clock) is one sample. The lease is the default
30 s: without the stop signal every sample would be about 10 s (the next heartbeat).

Then the price of the watch on the path nobody cancels: the CPU of `Lease.hold` around a
model call that answers at once, against the loop it replaced (no stop signal), in one
process, alternated.

Run: `.venv/bin/python bench/cancel.py [--cancels 100] [--backend postgres|sqlite|both]
[--holds 20000] [--server URL]`
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from app.store.migrate import upgrade_to_head  # noqa: E402
from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    server_argument,
)
from tests.e2e.processes import api_ready, spawn, stop, wait_until  # noqa: E402
from tests.mocks.holding import HoldingProvider, holding_provider  # noqa: E402
from tests.ports import free_port  # noqa: E402

KEY = "bench-cancel-key"
IN_FLIGHT = 4
WIRES = ("openai", "anthropic")


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(url: str, cancels: int, tmp: Path) -> dict[str, list[float]]:
    """Cancel-to-close and cancel round trip (seconds) of `cancels` streaming calls."""
    with holding_provider(hold=60) as provider:
        port = free_port()
        env = {
            "AGENTRUN_API_KEYS": KEY,
            "AGENTRUN_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "AGENTRUN_LEASE_SECONDS": "30",
            "AGENTRUN_REAP_INTERVAL": "1",
            "AGENTRUN_POLL_INTERVAL": "0.2",
            **provider.env(),
        }
        api = spawn(["api", "--port", str(port)], url, tmp / "api.log", **env)
        worker = spawn(["worker", "--concurrency", str(IN_FLIGHT)], url, tmp / "worker.log", **env)
        client = httpx.Client(
            base_url=f"http://127.0.0.1:{port}",
            headers={"Authorization": f"Bearer {KEY}"},
            timeout=30,
        )
        try:
            wait_until(lambda: api_ready(client), 30, "the API")
            wait_until(lambda: "worker started" in (tmp / "worker.log").read_text(), 30, "worker")
            return _cancel_all(client, provider, cancels)
        finally:
            client.close()
            stop(worker)
            stop(api)


def _cancel_all(
    client: httpx.Client, provider: HoldingProvider, cancels: int
) -> dict[str, list[float]]:
    rng = random.Random(24)
    to_close: list[float] = []
    round_trip: list[float] = []
    done = 0
    while done < cancels:
        batch = min(IN_FLIGHT, cancels - done)
        first = len(provider.connections)
        ids = []
        for i in range(batch):
            body = {
                "prompt": "take your time",
                "model": {"provider": WIRES[(done + i) % 2], "name": "held-model"},
                "tools": [],
                "stream": True,
            }
            created = client.post("/v1/runs", json=body)
            assert created.status_code == 201, created.text
            ids.append(created.json()["id"])
        held = provider.wait_for(first + batch, 30)[first:]
        # Which connection is whose run: the worker sends the run's requests in the order
        # it claimed them, not necessarily the creation order; cancel a run, then find the
        # connection that closed.
        for run_id in ids:
            # At a random moment, not in step with the SQLite poll the last cancel ended.
            time.sleep(rng.uniform(0, 0.3))
            open_before = {id(c) for c in held if c.closed_at is None}
            started = time.monotonic()
            response = client.post(f"/v1/runs/{run_id}/cancel")
            answered = time.monotonic()
            assert response.status_code == 200, response.text
            deadline = answered + 15
            closed = None
            while closed is None:
                closed = next(
                    (c for c in held if id(c) in open_before and c.closed_at is not None), None
                )
                if closed is None:
                    assert time.monotonic() < deadline, "no connection closed after a cancel"
                    time.sleep(0.0005)
            assert closed.closed_at is not None
            to_close.append(closed.closed_at - answered)
            round_trip.append(answered - started)
        done += batch
    return {"to_close": to_close, "round_trip": round_trip}


def report(backend: str, samples: dict[str, list[float]]) -> None:
    ms = [s * 1000 for s in samples["to_close"]]
    rt = [s * 1000 for s in samples["round_trip"]]
    print(
        f"{backend:>8}: {len(ms)} cancels; cancel's response → connection closed: "
        f"p50 {statistics.median(ms):.1f} ms, p90 {percentile(ms, 90):.1f} ms, "
        f"p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms "
        f"(the cancel request itself: p50 {statistics.median(rt):.1f} ms)"
    )


async def _previous_hold(call: Any, interval: float) -> Any:
    """`Lease.hold` before stop signals, for its price (a call that answers before any
    heartbeat)."""
    task = asyncio.ensure_future(call)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=interval)
            if task in done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()


async def _hold_cost(calls: int) -> tuple[float, float]:
    """CPU µs per hold, (before, after), alternated in rounds."""

    from app.clock import SYSTEM_CLOCK
    from app.store.run_records import RunRecord
    from app.worker.lease import Claim, Lease

    async def answer() -> int:
        await asyncio.sleep(0)  # (the answer arrives on a later turn of the loop)
        return 1

    record = RunRecord.__new__(RunRecord)
    object.__setattr__(record, "id", "run_bench")
    claim = Claim(record, 1, [])
    lease = Lease(None, 30.0, "bench", SYSTEM_CLOCK)  # type: ignore[arg-type]
    before: list[float] = []
    after: list[float] = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            await _previous_hold(answer(), 10.0)
        before.append((time.process_time() - started) / calls * 1e6)
        started = time.process_time()
        for _ in range(calls):
            await lease.hold(claim, answer())
        after.append((time.process_time() - started) / calls * 1e6)
    return statistics.median(before), statistics.median(after)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cancels", type=int, default=100)
    parser.add_argument("--backend", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--holds", type=int, default=20_000, help="holds per sample, 5 samples")
    server_argument(parser)
    args = parser.parse_args()
    backends = ["postgres", "sqlite"] if args.backend == "both" else [args.backend]
    for backend in backends:
        with tempfile.TemporaryDirectory() as tmp:
            if backend == "sqlite":
                url = f"sqlite:///{tmp}/agentrun.db"
                upgrade_to_head(url)
                report(backend, measure(url, args.cancels, Path(tmp)))
                continue
            admin, url = fresh_database(args.server)
            try:
                report(backend, measure(url, args.cancels, Path(tmp)))
            finally:
                drop_database(admin, url)
    was, now = asyncio.run(_hold_cost(args.holds))
    print(
        f"Lease.hold, a call nobody cancels: {was:.1f} µs CPU before stop signals, "
        f"{now:.1f} µs with them ({now - was:+.1f} µs per model call)"
    )


if __name__ == "__main__":
    main()
