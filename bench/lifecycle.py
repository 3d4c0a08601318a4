"""Lifecycle benchmark on PostgreSQL: the service beside the database's own ceiling.

One lifecycle = create → model call → suspend (one parallel tool round) → submit results
→ model call → completed, with the scripted provider. The client (this process) creates
runs and answers suspended ones through the service layer; 1, 2 and 4 `agentrun worker`
processes do the rest. In the same run, the SQL lifecycle of the performance notes is
issued directly with psycopg (the ceiling), so the ratio holds on any machine. Each
configuration is sampled `--repeat` times (median and range); besides throughput it
reports CPU per lifecycle of the database, the workers and the client, and WAL bytes per
lifecycle (counters that barely depend on the machine: good regression guards).

Run: `.venv/bin/python bench/lifecycle.py [--runs 2000] [--repeat 3] [--server postgresql://...]`
(`--resumes 60`, `--rounds 60`: the samples of the resume latency and of a tool round's
cost; `--service-only --workers 2`: the service rows alone; with `AGENTRUN_TRACING=true` and
`OTEL_EXPORTER_OTLP_ENDPOINT` set, traced).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import uvloop  # noqa: E402

from app import tracing  # noqa: E402
from app.core import (  # noqa: E402
    CallTools,
    ModelTurn,
    Text,
    ToolCall,
    Usage,
    stored,
)
from app.core.lifecycle import RunStatus  # noqa: E402
from app.core.scope import Scope  # noqa: E402
from app.core.serde import message_to_dict  # noqa: E402
from app.service import recorded  # noqa: E402
from app.service.runs import RunService, RunView  # noqa: E402
from app.settings import Settings  # noqa: E402
from app.store import changes  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.run_records import NewToolCall  # noqa: E402
from app.store.runs import RunStore  # noqa: E402
from bench.common import (  # noqa: E402
    SEEDED,
    Meter,
    completed_since,
    drop_database,
    fresh_database,
    open_since,
    prose,
    run_with_history,
    seed,
    server_argument,
    start_workers,
    stop_workers,
    summary,
    wal_position,
    workers_cpu,
    workers_listening,
)
from bench.reference_sql import (  # noqa: E402
    direct_sql,
    own_statements,
    record_statements,
)
from tests.helpers import results_for, run_body  # noqa: E402

#: Workers that sweep finished runs as soon as they are a second old, every second: the
#: retention sweep at its busiest, deleting while the lifecycle runs.
SWEEPING = {
    "AGENTRUN_RETENTION_DAYS": str(1 / 86400),
    "AGENTRUN_RETENTION_INTERVAL": "1",
    "AGENTRUN_RETENTION_BATCH": "200",
}


async def service_run(
    service: RunService,
    lifecycles: int,
    workers: int,
    logdir: Path,
    extra_env: dict[str, str] | None = None,
) -> dict[str, float]:
    """Closed loop: the client creates runs and answers suspended ones through the
    service layer while `workers` processes drive them."""
    url = service.settings.database_url
    sweeping = bool(extra_env) and "AGENTRUN_RETENTION_DAYS" in (extra_env or {})
    procs = start_workers(url, workers, logdir, f"w{workers}", extra_env)
    # (the full pause from 500 lifecycles on: --service-only's warm-up, runs / 4, has it too)
    await asyncio.to_thread(workers_listening, url, workers, 1.5 * min(1.0, lifecycles / 500))
    body = run_body()
    created = 0
    done = 0
    since = datetime.now(UTC)
    answering = asyncio.Semaphore(16)  # the client's pool size

    async def creator() -> None:
        nonlocal created
        while created < lifecycles:
            created += 1
            await service.create_run(body)

    async def answer(view: RunView) -> None:
        async with answering:
            await service.submit_tool_results(
                results_for(view), run_id=view.record.id, scope=Scope.ALL
            )

    async def executor() -> None:
        nonlocal done
        while done < lifecycles:
            waiting, _ = await service.list_runs(
                status=RunStatus.REQUIRES_ACTION, limit=200, cursor=None, scope=Scope.ALL
            )
            await asyncio.gather(*[answer(v) for v in waiting])
            if not waiting:  # count completions only when there is nothing to answer
                if sweeping:  # finished runs vanish: count what is no longer open (this
                    # counts up to 4 creates still in flight as done: < 0.5 % of a sample)
                    done = created - await open_since(service.store, since)
                else:
                    done = await completed_since(service.store, since)
                await asyncio.sleep(0.01)

    workers_before = workers_cpu(procs)
    meter = Meter(url)
    await asyncio.gather(*[creator() for _ in range(4)], executor())
    result = meter.stop(lifecycles)
    result["worker_cpu_ms"] = (workers_cpu(procs) - workers_before) * 1000 / lifecycles
    stop_workers(procs)
    return result


async def resume_latency(
    service: RunService, workers: int, logdir: Path, samples: int = 60
) -> float:
    """Results committed (run.resumed) → claimed again for the next model call, p50 in
    ms, at low load: one run at a time, so no queue stands in between."""
    url = service.settings.database_url
    procs = start_workers(url, workers, logdir, f"latency{workers}")
    await asyncio.to_thread(workers_listening, url, workers, 1.5 * min(1.0, samples / 60))
    body = run_body()
    latencies = []
    for _ in range(samples):
        view, _ = await service.create_run(body)
        while (
            await service.get_run(view.record.id, scope=Scope.ALL)
        ).record.status != RunStatus.REQUIRES_ACTION:
            await asyncio.sleep(0.002)
        suspended = await service.get_run(view.record.id, scope=Scope.ALL)
        await service.submit_tool_results(
            results_for(suspended), run_id=view.record.id, scope=Scope.ALL
        )
        while (
            await service.get_run(view.record.id, scope=Scope.ALL)
        ).record.status != RunStatus.COMPLETED:
            await asyncio.sleep(0.002)
        events = await service.store.events(view.record.id)
        resumed = [e.created_at for e in events if e.type == "run.resumed"]
        claims = [e.created_at for e in events if e.type == "run.claimed"]
        latencies.append((claims[1] - resumed[0]).total_seconds() * 1000)
    stop_workers(procs)
    return statistics.median(latencies)


ROUND_SIZES = (10, 100, 1000)


async def tool_round_cost(url: str, rounds: int = 60) -> list[tuple[int, float, float, float, int]]:
    """A tool round of a run whose conversation holds n messages, as the worker and the
    service make it: claim (with the log), load, the model's answer, suspend (snapshot +
    write: timed), the results submitted (resumed). The three runs take turns, so the
    machine's drift falls on each alike. Per n: suspend ms (median), of which the
    snapshot (µs, median), WAL per round (kB, mean), control document bytes."""
    engine = create_engine(url)
    store = RunStore(engine)
    service = RunService(store, Settings(database_url=url))
    ids = {}
    for n in ROUND_SIZES:
        history = [message_to_dict(m) for m in run_with_history(n, long=True).full_history()]
        view, _ = await service.create_run(run_body(history=history, max_turns=1000))
        ids[n] = view.record.id
    times: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    snaps: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    wal: dict[int, list[float]] = {n: [] for n in ROUND_SIZES}
    size: dict[int, int] = {}
    for r in range(rounds):
        for n in ROUND_SIZES:
            start = wal_position(url)
            now = datetime.now(UTC)
            claimed, _ = await store.apply(
                ids[n], changes.claim("bench", now + timedelta(seconds=60)), now, scope=Scope.ALL
            )
            record = await store.get(ids[n], with_log=True, scope=Scope.ALL)
            assert claimed is not None and record is not None
            loaded = stored.load(record.state, record.log)
            run = loaded.run
            if run.pending_tool_calls():  # (the last round's answers, as a worker applies them)
                recorded.apply(run, await store.tool_calls(record.id, run.turn()))
            run.next_step()
            call = ToolCall.from_wire(f"r{r}", "add", {"a": r, "b": r})
            answer = ModelTurn(
                choice=(Text(prose(10_000 + r)), call),
                usage=Usage(input_tokens=100, output_tokens=20, total_tokens=120),
                executable_tool_names=frozenset({"add"}),
                allowed_tool_names=frozenset({"add"}),
                message_id=f"msg{r}",
            )
            run.model_response(answer)
            assert isinstance(run.next_step(), CallTools)
            t0 = time.perf_counter()
            snapshot = stored.snapshot(loaded)
            t1 = time.perf_counter()
            pending = [NewToolCall(0, call.id, call.name, call.arguments)]
            change = changes.suspend_for_tools(
                record.version,
                snapshot,
                run.turn(),
                pending,
                f"h{r}{n}",
                now + timedelta(days=1),
                [],
                None,
                {"round": run.turn()},
                now,
            )
            suspended, _ = await store.apply(record.id, change, now, scope=Scope.ALL)
            times[n].append((time.perf_counter() - t0) * 1000)
            snaps[n].append((t1 - t0) * 1e6)
            assert suspended is not None
            view = await service.get_run(record.id, scope=Scope.ALL)
            await service.submit_tool_results(results_for(view), run_id=record.id, scope=Scope.ALL)
            wal[n].append((wal_position(url) - start) / 1024)
            size[n] = len(snapshot.control)
    await store.aclose()
    return [
        (
            n,
            statistics.median(times[n]),
            statistics.median(snaps[n]),
            statistics.mean(wal[n]),
            size[n],
        )
        for n in ROUND_SIZES
    ]


async def service_rows(service: RunService, args: argparse.Namespace, logdir: Path) -> None:
    """`--service-only`: the service rows alone (e.g. one build against another)."""
    print(f"{args.runs} lifecycles per sample, median (range) of {args.repeat} samples")
    print()
    print("| configuration | lifecycles/s | database CPU | worker CPU | client CPU | WAL |")
    print("|---|---|---|---|---|---|")
    configurations = [(int(w), None) for w in args.workers.split(",")]
    if args.retention:
        configurations.append((2, SWEEPING))
    for workers, env in configurations:
        await service_run(service, args.runs // 4, workers, logdir, env)  # warm-up
        samples = [
            await service_run(service, args.runs, workers, logdir, env) for _ in range(args.repeat)
        ]
        label = f"service, {workers} worker process(es) × 8" + (
            ", retention sweeping every second" if env else ""
        )
        print(
            f"| {label} | {summary(samples, 'per_second')} "
            f"| {summary(samples, 'db_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'worker_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'client_cpu_ms', '.1f')} ms "
            f"| {summary(samples, 'wal_kb', '.1f')} kB |"
        )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    server_argument(parser)
    parser.add_argument("--workers", default="1,2,4")
    parser.add_argument("--resumes", type=int, default=60, help="samples of the resume p50")
    parser.add_argument("--rounds", type=int, default=60, help="tool rounds per history size")
    parser.add_argument(
        "--service-only",
        action="store_true",
        help="only the service rows: no reference rows, resume latency or suspend cost",
    )
    parser.add_argument(
        "--retention",
        action="store_true",
        help="add a row with the workers' retention sweep deleting finished runs throughout",
    )
    args = parser.parse_args()
    admin, url = fresh_database(args.server)
    logdir = Path(os.environ.get("TMPDIR", "/tmp")) / "agentrun-bench"
    logdir.mkdir(exist_ok=True)
    try:
        seed(url, SEEDED)
        store = RunStore(create_engine(url, pool_size=16))
        settings = Settings(database_url=url)
        # Tracing as the environment asks (AGENTRUN_TRACING, OTEL_*): this process creates
        # and answers runs; the workers it starts read the same environment.
        tracing.configure(settings, "bench")
        service = RunService(store, settings)
        if args.service_only:
            await service_rows(service, args, logdir)
            await store.aclose()
            return
        await direct_sql(url, args.runs // 4, clients=8)  # warm-up
        ceiling = [await direct_sql(url, args.runs, clients=8) for _ in range(args.repeat)]
        rows = [("direct SQL (6 commits, 8 clients)", ceiling, None)]
        script = await record_statements(service)
        own = [await own_statements(url, script, args.runs, 8) for _ in range(args.repeat)]
        rows.append(("the service's own statements, issued directly (8 clients)", own, None))
        for workers in [int(w) for w in args.workers.split(",")]:
            samples = [
                await service_run(service, args.runs, workers, logdir) for _ in range(args.repeat)
            ]
            rows.append((f"service, {workers} worker process(es) × 8", samples, workers))
        if args.retention:  # last: the sweep deletes the seeded runs too
            samples = [
                await service_run(service, args.runs, 2, logdir, SWEEPING)
                for _ in range(args.repeat)
            ]
            rows.append(("service, 2 × 8, retention sweeping every second", samples, 2))
        top = statistics.median(sample["per_second"] for sample in ceiling)
        print(
            f"{args.runs} lifecycles per sample, median (range) of {args.repeat} samples; "
            "CPU and WAL per lifecycle"
        )
        print()
        print(
            "| configuration | lifecycles/s | % of direct SQL | % of own statements "
            "| resume p50 | database CPU | worker CPU | client CPU | WAL |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        own_top = statistics.median(sample["per_second"] for sample in own)
        for label, samples, workers in rows:
            rate = statistics.median(sample["per_second"] for sample in samples)
            of_own = f"{100 * rate / own_top:.0f} %" if workers else ""
            latency = (
                f"{await resume_latency(service, workers, logdir, args.resumes):.1f} ms"
                if workers
                else ""
            )
            worker_cpu = f"{summary(samples, 'worker_cpu_ms', '.1f')} ms" if workers else ""
            print(
                f"| {label} | {summary(samples, 'per_second')} | {100 * rate / top:.0f} % "
                f"| {of_own} | {latency} | {summary(samples, 'db_cpu_ms', '.1f')} ms "
                f"| {worker_cpu} "
                f"| {summary(samples, 'client_cpu_ms', '.1f')} ms "
                f"| {summary(samples, 'wal_kb', '.1f')} kB |"
            )
        await store.aclose()
        print()
        print(
            "| history messages | suspend (snapshot + write) | of which snapshot "
            "| WAL per tool round | control document |"
        )
        print("|---|---|---|---|---|")
        for n, ms, us, kb, size in await tool_round_cost(url, args.rounds):
            print(f"| {n} | {ms:.2f} ms | {us:.0f} µs | {kb:.1f} kB | {size} B |")
    finally:
        drop_database(admin, url)


if __name__ == "__main__":
    uvloop.run(main())
