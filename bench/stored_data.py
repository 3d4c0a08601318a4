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
   one gets the active backlog only: 5,000 suspended and 1,000 queued copies; the "kept"
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
import os
import random
import re
import subprocess
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

from app.service.tokens import callback_token, token_hash  # noqa: E402
from app.store.backend.engines import create_engine  # noqa: E402
from app.store.fold import fold  # noqa: E402
from app.store.migrate import upgrade_to_head  # noqa: E402
from app.store.schema import ENDED_SQL  # noqa: E402
from bench.common import (  # noqa: E402
    AGENTRUN,
    drop_database,
    fresh_database,
    pct,
    server_argument,
)
from tests.helpers import run_body  # noqa: E402
from tests.mocks.receiver import SECRET, webhook_receiver  # noqa: E402
from tests.mocks.uvicorn_thread import free_port  # noqa: E402

KEY = "bench-key"
TEMPLATES = 5  # of each kind
SUSPENDED = 5_000
QUEUED = 1_000
SPREAD = "interval '30 days' - interval '2 hours'"
CHUNK = 20_000  # copies per statement
#: Per request: p50, p95 sequential; p50, p95 with 8 concurrent callers (ms).
Timings = dict[str, tuple[float, float, float, float]]


# --- processes -------------------------------------------------------------------------------


class Service:
    """`agentrun api` and `workers` worker processes on one database (127.0.0.1)."""

    def __init__(self, url: str, logdir: Path, workers: int = 2, **env: str) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "AGENTRUN_DATABASE_URL": url,
            "AGENTRUN_API_KEYS": KEY,
            "AGENTRUN_PUBLIC_URL": self.base,
            **env,
        }
        self.logdir = logdir
        self.api = self._spawn(["api", "--port", str(self.port)], "api")
        self.workers = [self.start_worker(i) for i in range(workers)]

    def _spawn(self, args: list[str], name: str) -> subprocess.Popen[bytes]:
        log = (self.logdir / f"{name}.log").open("ab")
        return subprocess.Popen([AGENTRUN, *args], env=self.env, stdout=log, stderr=log)

    def start_worker(self, i: int) -> subprocess.Popen[bytes]:
        return self._spawn(["worker", "--concurrency", "4"], f"worker{i}")

    def stop_workers(self) -> None:
        for p in self.workers:
            p.terminate()
        for p in self.workers:
            p.wait(60)
        self.workers = []

    def stop(self) -> None:
        self.stop_workers()
        self.api.terminate()
        self.api.wait(60)

    def client(self) -> httpx.Client:
        headers = {"Authorization": f"Bearer {KEY}"}
        client = httpx.Client(base_url=self.base, headers=headers, timeout=120)
        deadline = time.monotonic() + 60
        while True:
            try:
                if client.get("/readyz").status_code == 200:
                    return client
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the API did not become ready")
            time.sleep(0.1)


# --- 1. templates through the service ---------------------------------------------------------


def wait_status(client: httpx.Client, run_id: str, status: str) -> dict[str, Any]:
    run: dict[str, Any] = client.get(
        f"/v1/runs/{run_id}/wait", params={"status": status, "timeout": 30}
    ).json()
    assert run["status"] == status, run
    return run


def make_templates(url: str, logdir: Path) -> dict[str, list[str]]:
    """Run ids of the templates, by kind, written by the service itself."""
    with webhook_receiver() as receiver:
        env = {"AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true", "AGENTRUN_WEBHOOK_SECRET": SECRET}
        service = Service(url, logdir, **env)
        try:
            client = service.client()
            body = run_body(webhook={"url": receiver.url}).model_dump(
                mode="json", exclude_none=True
            )
            kinds: dict[str, list[str]] = {"completed": [], "suspended": [], "queued": []}
            for kind in ("completed", "suspended"):
                for _ in range(TEMPLATES):
                    payload = {**body, "expires_in": 365 * 86400} if kind == "suspended" else body
                    run = client.post("/v1/runs", json=payload).json()
                    run = wait_status(client, run["id"], "requires_action")
                    kinds[kind].append(run["id"])
                    if kind == "completed":
                        results = [
                            {"tool_call_id": c["id"], "output": str(sum(c["arguments"].values()))}
                            for c in run["required_action"]["tool_calls"]
                        ]
                        answer = {"results": results}
                        client.post(f"/v1/runs/{run['id']}/tool-results", json=answer)
                        wait_status(client, run["id"], "completed")
            deadline = time.monotonic() + 60  # every delivery made before the copies
            while len(receiver.delivered) < 3 * TEMPLATES and time.monotonic() < deadline:
                time.sleep(0.1)
            service.stop_workers()
            for _ in range(TEMPLATES):
                kinds["queued"].append(client.post("/v1/runs", json=body).json()["id"])
        finally:
            service.stop()
    return kinds


# --- 2. copies in SQL ---------------------------------------------------------------------------

#: Each table of a run's rows, and the column that names the run.
RUN_TABLES = {
    "runs": "id",
    "run_configs": "run_id",
    "run_events": "run_id",
    "run_messages": "run_id",
    "tool_calls": "run_id",
    "model_calls": "run_id",
    "webhook_outbox": "run_id",
}
TEXT_TYPES = {"text", "character varying", "json", "jsonb"}
TIME_TYPES = {"timestamp with time zone", "timestamp without time zone"}


def columns(conn: psycopg.Connection[Any], table: str) -> list[tuple[str, str, bool]]:
    """(name, type, generated by a sequence) of each column."""
    rows = conn.execute(
        "SELECT column_name, data_type, coalesce(column_default LIKE 'nextval%%', false)"
        " FROM information_schema.columns WHERE table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [(str(n), str(t), bool(s)) for n, t, s in rows]


def copy_expression(table: str, column: str, kind: str) -> str:
    """What a copy's `column` holds: the template's, with the copy's run id and times."""
    if column == RUN_TABLES.get(table):
        return "p.new_id"
    if table == "model_calls" and column == "folded":  # not in the rollups: `settle` folds
        return "false"
    if table == "runs" and column == "callback_token_hash":
        return "CASE WHEN t.callback_token_hash IS NULL THEN NULL ELSE md5(p.new_id) END"
    if table == "runs" and column == "available_at":
        return "CASE p.kind WHEN 'queued' THEN now() + interval '30 days' ELSE t.available_at + p.shift END"  # noqa: E501
    if kind in TIME_TYPES:
        return f"t.{column} + p.shift"
    if kind in TEXT_TYPES:  # the run id appears in ids, payloads, the log: the copy's
        return f"replace(t.{column}::text, p.template, p.new_id)::{kind_cast(kind)}"
    return f"t.{column}"


def kind_cast(kind: str) -> str:
    return {"character varying": "varchar"}.get(kind, kind)


def copy_runs(url: str, templates: dict[str, list[str]], completed: int) -> None:
    """`completed` completed copies, and the backlog (SUSPENDED, QUEUED): copy g of a kind
    has the same id and times in every database seeded with it."""
    counts = {"completed": completed, "suspended": SUSPENDED, "queued": QUEUED}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "CREATE UNLOGGED TABLE bench_plan (n bigint PRIMARY KEY, kind text, template text,"
            " new_id text, shift interval)"
        )
        n = 0
        for kind, count in counts.items():
            ids = templates[kind]
            # Copy g of `count` is created at now - 30 days * g / count (newest first).
            conn.execute(
                f"""
                INSERT INTO bench_plan
                SELECT %(start)s + g, %(kind)s, t.id,
                       'run_' || %(letter)s || lpad(g::text, 20, '0'),
                       (now() - ({SPREAD}) * g / %(count)s) - t.created_at
                FROM generate_series(0, %(count)s - 1) g
                JOIN unnest(%(ids)s::text[]) WITH ORDINALITY AS o(id, i) ON o.i - 1 = g %% %(k)s
                JOIN runs t ON t.id = o.id
                """,
                {
                    "start": n,
                    "kind": kind,
                    "letter": kind[0],
                    "count": count,
                    "ids": ids,
                    "k": len(ids),
                },
            )
            n += count
        tables = {t: columns(conn, t) for t in [*RUN_TABLES, "webhook_attempts"]}
        unfolded = bool(columns(conn, "unfolded_runs"))  # (revision 0021 on)
        for lo in range(0, n, CHUNK):
            where = f"p.n >= {lo} AND p.n < {lo + CHUNK}"
            for table, key in RUN_TABLES.items():
                cols = [(c, k) for c, k, generated in tables[table] if not generated]
                names = ", ".join(c for c, _ in cols)
                exprs = ", ".join(copy_expression(table, c, k) for c, k in cols)
                conn.execute(
                    f"INSERT INTO {table} ({names}) SELECT {exprs} FROM bench_plan p"
                    f" JOIN {table} t ON t.{key} = p.template WHERE {where}"
                )
            cols = [(c, k) for c, k, generated in tables["webhook_attempts"] if not generated]
            names = ", ".join(c for c, _ in cols)
            exprs = ", ".join(
                "o.id" if c == "outbox_id" else copy_expression("webhook_attempts", c, k)
                for c, k in cols
            )
            conn.execute(
                f"INSERT INTO webhook_attempts ({names}) SELECT {exprs} FROM bench_plan p"
                " JOIN webhook_outbox tw ON tw.run_id = p.template"
                " JOIN webhook_attempts t ON t.outbox_id = tw.id"
                " JOIN webhook_outbox o"
                " ON o.webhook_id = replace(tw.webhook_id, p.template, p.new_id)"
                f" WHERE {where}"
            )
            if unfolded:  # a finished copy waits for the fold, as the ending write notes it
                conn.execute(
                    "INSERT INTO unfolded_runs (run_id, tenant_id, status, ended_at, counts)"
                    " SELECT p.new_id, t.tenant_id, t.status, t.updated_at + p.shift, true"
                    f" FROM bench_plan p JOIN runs t ON t.id = p.template WHERE {where}"
                    f" AND t.{ENDED_SQL}"
                )
            print(f"  copied {min(lo + CHUNK, n):,} of {n:,} runs", flush=True)
        conn.execute("DROP TABLE bench_plan")
        callback_tokens(conn)


def settle(url: str) -> str:
    """Upgrade to the Alembic head, fold every finished run (`app.store.fold`), vacuum and
    analyse: what the database needs before it is measured, made or kept. (Analysed first:
    on the copies' stale statistics revision 0020's fold read every unfolded call a batch.)"""
    started = time.perf_counter()
    upgrade_to_head(url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")

    async def fold_all() -> int:
        engine = create_engine(url)
        try:
            return await fold(engine)
        finally:
            await engine.dispose()

    folded = asyncio.run(fold_all())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return f"folded {folded:,} runs, settled in {time.perf_counter() - started:.0f} s"


def callback_tokens(conn: psycopg.Connection[Any]) -> None:
    """A suspended copy's callback token is its own (derived from its id, as the service
    derives it): store its hash, in place of the unique placeholder of the copy."""
    row = conn.execute("SELECT value FROM service_secrets WHERE name = 'callback_key'")
    key = str(row.fetchone()[0])  # type: ignore[index]
    waiting = conn.execute(
        "SELECT id, (waiting_reason->>'round')::int FROM runs"
        " WHERE callback_token_hash IS NOT NULL AND id ~ '^run_s[0-9]{20}$'"
    ).fetchall()
    with conn.transaction(), conn.cursor() as cur:
        cur.executemany(
            "UPDATE runs SET callback_token_hash = %s WHERE id = %s",
            [(token_hash(callback_token(key, i, r)), i) for i, r in waiting],
        )


def copies(url: str) -> int:
    """How many completed copies a seeded database holds."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM runs WHERE id ~ '^run_c[0-9]{20}$'")
        return int(row.fetchone()[0])  # type: ignore[index]


def database_size(url: str) -> tuple[int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT pg_database_size(current_database()), count(*) FROM runs")
        size, runs = row.fetchone()  # type: ignore[misc]
    return int(size), int(runs)


def newest(url: str) -> datetime:
    """When the newest run was created: the seeding's "now" (copy 0 of each kind)."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT max(created_at) FROM runs").fetchone()[0]  # type: ignore[index,no-any-return]


# --- 3. a sample through the API ----------------------------------------------------------------


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


def verify_sample(client: httpx.Client, templates: dict[str, list[str]], completed: int) -> int:
    """A sample of each kind's copies read through the API: each equals one of its kind's
    templates but for ids and times (which one is not known when the databases were kept
    from an earlier run: the templates are read back in no set order)."""
    checked = 0
    counts = {"completed": completed, "suspended": SUSPENDED, "queued": QUEUED}
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


# --- 4. the requests -----------------------------------------------------------------------------


def requests(old_run: str, now: datetime) -> list[tuple[str, str]]:
    """The requests; usage windows end at `now` (the seeding's) plus an hour."""

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
    url: str, old_run: str, seeded_at: datetime, logdir: Path, sequential: int, each: int
) -> Timings:
    """The requests on `url`, with an API and 2 workers whose retention sweep deletes none
    of the copies, however long ago they were seeded."""
    age = (datetime.now(UTC) - seeded_at).total_seconds() / 86400
    service = Service(url, logdir, AGENTRUN_RETENTION_DAYS=f"{30 + age + 1 / 24:.3f}")
    try:
        client = service.client()
        cookies = login(client)
        time.sleep(2.0)  # the workers started, listened, looked at the queue
        paths = requests(old_run, seeded_at)
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


def templates_of(url: str) -> dict[str, list[str]]:
    """A kept database's templates, by kind (its runs not copied, by their status)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT id, status FROM runs WHERE id !~ '^run_[csq][0-9]{20}$' ORDER BY created_at"
        ).fetchall()
    kinds = {"completed": "completed", "requires_action": "suspended", "queued": "queued"}
    templates: dict[str, list[str]] = {k: [] for k in kinds.values()}
    for run_id, status in rows:
        templates[kinds[status]].append(run_id)
    return templates


def copy_database(admin: str, url: str, suffix: str) -> str:
    """A new database made from `url` (its template), named with `suffix`."""
    target = make_url(url).set(database=f"{make_url(url).database}_{suffix}")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{target.database}" TEMPLATE "{make_url(url).database}"')
    return target.render_as_string(hide_password=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    server_argument(parser)
    parser.add_argument("--runs", type=int, default=200_000, help="completed runs to seed")
    parser.add_argument("--sequential", type=int, default=20, help="requests one at a time")
    parser.add_argument("--each", type=int, default=5, help="requests per concurrent caller")
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
            upgrade_to_head(empty)
            started = time.perf_counter()
            templates = make_templates(empty, logdir)
            builds = {"empty": f"{time.perf_counter() - started:.0f} s"}
            for name, completed in (("backlog", 0), ("seeded", args.runs)):
                started = time.perf_counter()
                made[name] = copy_database(admin, empty, name)
                copy_runs(made[name], templates, completed)
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
                checked = verify_sample(checker.client(), templates, copies(dbs[name]))
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
                url, olds[name], seeded_at, logdir, args.sequential, args.each
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
