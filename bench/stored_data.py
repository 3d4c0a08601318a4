"""Stored-data benchmark (issue 22): what the reads that look across runs cost with a month
of kept runs, beside the same processes on a database without them.

1. Templates through the service's own writes: `agentrun api` + 2 `agentrun worker`s on a
   fresh PostgreSQL database, with the scripted provider and a webhook receiver on
   127.0.0.1, complete runs with a full tool round (2 model calls, 2 tool calls, ~10
   events, a few messages, 2 webhook deliveries), suspend others (waiting on their 2
   calls) and queue a few with no worker running. That database is the "empty" one.
2. Two copies of it are seeded with copies of the templates made in SQL (`copy_runs`):
   every row of every table of a run, with a new run id wherever the id appears (also
   inside JSON and the log), its timestamps shifted so creations spread over 30 days,
   unique columns kept unique (callback token hashes, webhook ids), webhook attempts
   pointed at their copied delivery, not folded yet (in `unfolded_runs`). The "backlog"
   one gets the active backlog only: 5,000 suspended and 1,000 queued copies
   (`--suspended`, `--queued`; of `--templates` 5 templates of each kind); the "kept"
   one the same backlog (the same ids and times) and N completed copies (`--runs`,
   200,000). Queued copies become due in 30 days, so the workers do not drain them while
   the requests are measured; copies are at most 30 days minus 2 hours old, so the
   retention sweep deletes none (kept databases measured later: retention is lengthened
   by their age, and the usage windows end at the newest copy's creation).
3. Each database is upgraded to the Alembic head and folded to completion
   (`app.store.fold`), then vacuumed and analysed, so kept databases measured after a
   schema change measure the same thing. A sample of copies is read through the API and
   compared with its template.
4. `agentrun api` + 2 workers on each database; each request is timed sequentially and
   with 8 concurrent callers (p50 and p95); the table shows the three databases and the
   kept one's ratios against both. The issue is about what is kept, not the active
   backlog (which grows with the work in progress, whatever is kept): its targets (1.5x at
   p50, 2x at p95, sequential and concurrent) are judged on the ratio against the
   same-backlog database; the ratio against the empty one is shown for reference.

Run: `.venv/bin/python bench/stored_data.py [--runs 200000] [--server postgresql://...]`
(`--keep` leaves the three databases and prints their URLs; `--seed-only` builds, verifies
and keeps them without measuring; `--empty URL --backlog URL --seeded URL` measures kept
ones again). Loopback only.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psycopg
import uvloop
from sqlalchemy.engine import make_url

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.common import (  # noqa: E402
    drop_database,
    fresh_database,
    pct,
    server_argument,
    workers_listening,
)
from bench.stored_seed import (  # noqa: E402
    KEY,
    QUEUED,
    SUSPENDED,
    TEMPLATES,
    Service,
    copies,
    copy_database,
    copy_runs,
    make_templates,
    settle,
    templates_of,
)

#: Per request: p50, p95 sequential; p50, p95 with 8 concurrent callers (ms).
Timings = dict[str, tuple[float, float, float, float]]


def database_size(url: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database()), count(*) FROM runs")
        size, runs = row.fetchone()  # type: ignore[misc]
    return int(size), int(runs)


def newest(url: str) -> datetime:
    """When the newest run was created: the seeding's "now" (copy 0 of each kind)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT max(created_at) FROM runs").fetchone()[0]  # type: ignore[index,no-any-return]


def comparable(run: dict[str, Any], events: list[dict[str, Any]], messages: Any) -> Any:
    """What a copy shares with its template: all but ids and times."""
    text = repr((run, [(e["seq"], e["type"], e["data"]) for e in events], messages))
    text = re.sub(r"run_[A-Za-z0-9]{21}", "RUN", text)
    text = re.sub(r"/v1/callbacks/[A-Za-z0-9_-]+/", "/v1/callbacks/TOKEN/", text)  # (by id)
    # which worker process took it (host:pid): templates of one kind differ only there
    text = re.sub(r"'worker': '[^']*'", "'worker': 'WORKER'", text)
    # a queued run's place: the templates are due, the copies due in 30 days
    text = re.sub(r"'queue': \{[^}]*\}", "'queue': QUEUE", text)
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "TIME", text)


def read_run(client: httpx.Client, run_id: str) -> Any:
    run = client.get(f"/v1/runs/{run_id}")
    assert run.status_code == 200, run.text
    events = client.get(f"/v1/runs/{run_id}/events").json()["data"]
    messages = client.get(f"/v1/runs/{run_id}/messages").json()
    return run.json(), events, messages


def verify_sample(
    client: httpx.Client, templates: dict[str, list[str]], counts: dict[str, int]
) -> int:
    """A sample of each kind's copies (`counts` of each) read through the API: each equals
    one of its kind's templates but for ids and times (which one is not known when the
    databases were kept from an earlier run: the templates are read back in no set order)."""
    checked = 0
    rng = random.Random(22)
    for kind, count in counts.items():
        status = "requires_action" if kind == "suspended" else kind
        still = [read_run(client, t) for t in templates[kind]]
        expected = {comparable(*r): r for r in still if r[0]["status"] == status}
        if not expected:  # kept databases: the measuring workers took the queued templates
            print(f"  {kind} templates have moved on since the copies: not compared")
            continue
        for g in rng.sample(range(count), min(count, 20)):
            copy_id = f"run_{kind[0]}{g:020d}"
            run, events, messages = read_run(client, copy_id)
            assert run["id"] == copy_id and run["status"] == (
                "requires_action" if kind == "suspended" else kind
            ), run
            assert all(e["data"].get("run_id", copy_id) == copy_id for e in events)
            got = comparable(run, events, messages)
            assert got in expected, f"{copy_id} equals none of the {kind} templates"
            checked += 1
    return checked


def requests(old_run: str, now: datetime, template: str = "") -> list[tuple[str, str]]:
    """The requests; usage windows end at `now` (the seeding's) plus an hour. The runs
    list's searches: by the first characters of `template`'s id (a template: in every
    database); by `run_c0`, which every completed copy's id starts with and no suspended
    run's (the suspended list's walk of that range, to its bound); by an agent no run
    started from (the walk's bound) and by metadata (a fifth of the copies match one
    value, none the other); every tenant's runs (one here: the merge of one)."""

    def since(days: int) -> str:
        start = (now - timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"from={start}&to={(now + timedelta(hours=1)).strftime('%Y-%m-%dT%H:%M:%SZ')}"

    return [
        ("`GET /v1/usage` for 30 days", f"/v1/usage?{since(30)}"),
        ("`GET /v1/usage` for 1 day", f"/v1/usage?{since(1)}"),
        ("`GET /metrics`", "/metrics"),
        ("`/admin` main page", "/admin"),
        ("`/admin` suspended-runs rows", "/admin/rows?status=requires_action"),
        ("`/admin` overview", "/admin/overview"),
        ("`/admin` overview, 30 days by agent", "/admin/overview?window=30d&split=agent"),
        ("`/admin` all runs", "/admin?status=any"),
        ("`/admin` search: id prefix (6 characters)", f"/admin?status=any&id={template[:10]}"),
        ("`/admin` search: suspended, id prefix `run_c0`", "/admin?id=run_c0"),
        ("`/admin` search: agent, none match", "/admin?status=any&agent=bench-agent"),
        ("`/admin` search: metadata, 1 in 5 match", "/admin?status=any&meta=template%3Dc0"),
        ("`/admin` search: metadata, none match", "/admin?status=any&meta=template%3Dnone"),
        ("`/admin` every tenant's suspended runs", "/admin?tenant=*"),
        ("`/admin` every tenant's runs", "/admin?status=any&tenant=*"),
        (
            "`GET /v1/runs?status=requires_action&limit=50`",
            "/v1/runs?status=requires_action&limit=50",
        ),
        ("`GET /v1/runs?limit=50`", "/v1/runs?limit=50"),
        ("`GET /v1/runs/{id}` of an old run", f"/v1/runs/{old_run}"),
        ("its `/events`", f"/v1/runs/{old_run}/events"),
        ("its `/messages`", f"/v1/runs/{old_run}/messages"),
    ]


def login(client: httpx.Client) -> dict[str, str]:
    """A dashboard session's cookies (the login form with its CSRF token)."""
    page = client.get("/admin/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None, page.text
    form = {"api_key": KEY, "next": "/admin", "csrf_token": token.group(1)}
    done = client.post("/admin/login", data=form)
    assert done.status_code in (302, 303), done.text
    return dict(client.cookies)


async def timed(session: aiohttp.ClientSession, path: str, times: list[float]) -> None:
    t0 = time.perf_counter()
    async with session.get(path, allow_redirects=False) as response:
        await response.read()
    times.append((time.perf_counter() - t0) * 1000)
    assert response.status == 200, (path, response.status)


async def measure(
    base: str, cookies: dict[str, str], paths: list[tuple[str, str]], sequential: int, each: int
) -> Timings:
    """Per request: p50, p95 of `sequential` requests; p50, p95 with 8 concurrent callers
    making `each` requests apiece."""
    out = {}
    async with aiohttp.ClientSession(
        base_url=base,
        headers={"Authorization": f"Bearer {KEY}"},
        cookies=cookies,
        connector=aiohttp.TCPConnector(limit=8),
        timeout=aiohttp.ClientTimeout(total=600),
    ) as session:
        for name, path in paths:
            for _ in range(2):  # warm: plans, caches, connections
                await timed(session, path, [])
            alone: list[float] = []
            for _ in range(sequential):
                await timed(session, path, alone)
            together: list[float] = []

            async def caller(path: str = path, together: list[float] = together) -> None:
                for _ in range(each):
                    await timed(session, path, together)

            await asyncio.gather(*[caller() for _ in range(8)])
            out[name] = (pct(alone, 0.5), pct(alone, 0.95), pct(together, 0.5), pct(together, 0.95))
            print(f"  {name}: {out[name][0]:.1f} ms ({out[name][2]:.1f} ms)", flush=True)
    return out


def measure_database(
    url: str,
    old_run: str,
    seeded_at: datetime,
    logdir: Path,
    sequential: int,
    each: int,
    workers: int,
    template: str = "",
) -> Timings:
    """The requests on `url`, with an API and `workers` workers whose retention sweep
    deletes none of the copies, however long ago they were seeded."""
    age = (datetime.now(UTC) - seeded_at).total_seconds() / 86400
    retention = f"{30 + age + 1 / 24:.3f}"
    service = Service(url, logdir, workers, AGENTRUN_RETENTION_DAYS=retention)
    try:
        client = service.client()
        cookies = login(client)
        workers_listening(url, workers, 2.0 * min(1.0, sequential / 20))
        paths = requests(old_run, seeded_at, template)
        return asyncio.run(measure(service.base, cookies, paths, sequential, each))
    finally:
        service.stop()


def ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def table(columns: dict[str, Timings], kept: str) -> str:
    """Each database's p50 and p95, sequential (8 concurrent callers), and the kept one's
    ratios against the others (the same-backlog one's first: the issue's targets)."""
    others = [name for name in columns if name != kept]
    head = [f"{c} {p} (8)" for c in columns for p in ("p50", "p95")]
    head += [f"× {c} {p} (8)" for c in reversed(others) for p in ("p50", "p95")]
    lines = ["| request | " + " | ".join(head) + " |", "|---" * (len(head) + 1) + "|"]
    for name in columns[kept]:
        cells = [
            f"{ms(t[i])} ({ms(t[i + 2])})"
            for c in columns.values()
            for t in [c[name]]
            for i in (0, 1)
        ]
        b = columns[kept][name]
        for other in reversed(others):
            a = columns[other][name]
            cells.append(f"{b[0] / a[0]:.1f} ({b[2] / a[2]:.1f})")
            cells.append(f"{b[1] / a[1]:.1f} ({b[3] / a[3]:.1f})")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    server_argument(parser)
    parser.add_argument("--runs", type=int, default=200_000, help="completed runs to seed")
    parser.add_argument("--suspended", type=int, default=SUSPENDED, help="suspended copies")
    parser.add_argument("--queued", type=int, default=QUEUED, help="queued copies")
    parser.add_argument("--templates", type=int, default=TEMPLATES, help="of each kind")
    parser.add_argument("--sequential", type=int, default=20, help="requests one at a time")
    parser.add_argument("--each", type=int, default=5, help="requests per concurrent caller")
    parser.add_argument("--workers", type=int, default=2, help="worker processes")
    parser.add_argument(
        "--without-backlog",
        action="store_true",
        help="no same-backlog database: the kept runs beside the empty database alone",
    )
    parser.add_argument("--keep", action="store_true", help="leave the three databases")
    parser.add_argument("--seed-only", action="store_true", help="build, verify, keep: no timing")
    parser.add_argument("--empty", help="an empty database made by an earlier --keep")
    parser.add_argument("--backlog", help="its copy with the backlog alone")
    parser.add_argument("--seeded", help="its copy with the backlog and the kept runs")
    args = parser.parse_args()
    urls = [u for u in (args.server, args.empty, args.backlog, args.seeded) if u]
    if any(make_url(u).host not in ("127.0.0.1", "localhost", "::1") for u in urls):
        sys.exit("loopback only: every database must be on a PostgreSQL server on 127.0.0.1")
    if bool(args.empty) != bool(args.seeded):
        sys.exit("--empty and --seeded go together (--backlog besides, if kept)")
    logdir = Path("/tmp/agentrun-bench-stored")
    logdir.mkdir(exist_ok=True)
    admin = make_url(args.server).set(drivername="postgresql").render_as_string(False)
    made: dict[str, str] = {}  # databases this run made: "empty", "backlog", "seeded"
    keep = args.keep or args.seed_only
    try:
        if args.empty and args.seeded:
            dbs = {k: getattr(args, k) for k in ("empty", "backlog", "seeded") if getattr(args, k)}
            if not args.backlog:
                print("no --backlog: the kept runs are compared with the empty database only")
            templates = templates_of(args.empty)
            for name, url in dbs.items():
                print(f"{name}: {settle(url)}", flush=True)
            builds = {name: "(kept)" for name in dbs}
        else:
            _, empty = fresh_database(args.server)
            made["empty"] = empty
            started = time.perf_counter()
            templates = make_templates(empty, logdir, args.templates, args.workers)
            builds = {"empty": f"{time.perf_counter() - started:.0f} s"}
            seeds = [("backlog", 0), ("seeded", args.runs)][args.without_backlog :]
            for name, completed in seeds:
                started = time.perf_counter()
                made[name] = copy_database(admin, empty, name)
                copy_runs(made[name], templates, completed, args.suspended, args.queued)
                builds[name] = f"{time.perf_counter() - started:.0f} s"
            for name, url in made.items():
                started = time.perf_counter()
                print(f"{name}: {settle(url)}", flush=True)
                builds[name] += f" + {time.perf_counter() - started:.0f} s settling"
            dbs = dict(made)
        for name, url in dbs.items():
            size, count = database_size(url)
            print(f"{name}: {count:,} runs, {size / 2**30:.2f} GiB, built in {builds[name]}")
        completed = copies(dbs["seeded"])
        for name in [n for n in ("backlog", "seeded") if n in dbs]:
            checker = Service(dbs[name], logdir, workers=0)  # (the API alone)
            try:
                kinds = ("completed", "suspended", "queued")
                counts = {kind: copies(dbs[name], kind) for kind in kinds}
                checked = verify_sample(checker.client(), templates, counts)
            finally:
                checker.stop()
            print(f"{name}: verified {checked} copies against their templates", flush=True)
        if args.seed_only:
            return
        seeded_at = newest(dbs["seeded"])
        olds = {name: templates["completed"][0] for name in dbs}
        olds["seeded"] = f"run_c{completed - 1:020d}"  # the oldest copy
        results: dict[str, Timings] = {}
        for name, url in dbs.items():
            print(f"{name} database:", flush=True)
            results[name] = measure_database(
                url,
                olds[name],
                seeded_at,
                logdir,
                args.sequential,
                args.each,
                args.workers,
                templates["completed"][0],
            )
        _, count = database_size(dbs["seeded"])
        label = f"{count / 1000:,.0f}k kept"
        labels = {"empty": "empty", "backlog": "backlog", "seeded": label}
        judged = "; the targets are judged on × backlog" if "backlog" in dbs else ""
        print(f"\np50 and p95 in ms, sequential (8 concurrent callers); {label}{judged}\n")
        print(table({labels[k]: v for k, v in results.items()}, label))
    finally:
        if not keep:
            for url in made.values():
                drop_database(admin, url)
        elif made:
            print("kept:", " ".join(f"--{name} {url}" for name, url in made.items()))


if __name__ == "__main__":
    uvloop.install()
    main()
