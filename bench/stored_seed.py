"""The stored-data benchmark's databases (`bench/stored_data.py`, steps 1–3): templates
made by the service's own processes, copied in SQL into a month of kept runs, upgraded,
folded and settled."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg
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
)
from tests.helpers import run_body  # noqa: E402
from tests.mocks.receiver import SECRET, webhook_receiver  # noqa: E402
from tests.ports import free_port  # noqa: E402

KEY = "bench-key"


TEMPLATES = 5  # of each kind


SUSPENDED = 5_000


QUEUED = 1_000


SPREAD = "interval '30 days' - interval '2 hours'"


CHUNK = 20_000  # copies per statement


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


def wait_status(client: httpx.Client, run_id: str, status: str) -> dict[str, Any]:
    run: dict[str, Any] = client.get(
        f"/v1/runs/{run_id}/wait", params={"status": status, "timeout": 30}
    ).json()
    assert run["status"] == status, run
    return run


def make_templates(
    url: str, logdir: Path, per_kind: int = TEMPLATES, workers: int = 2
) -> dict[str, list[str]]:
    """Run ids of the templates (`per_kind` of each), by kind, written by the service."""
    with webhook_receiver() as receiver:
        env = {"AGENTRUN_WEBHOOK_ALLOW_PRIVATE": "true", "AGENTRUN_WEBHOOK_SECRET": SECRET}
        service = Service(url, logdir, workers, **env)
        try:
            client = service.client()
            body = run_body(webhook={"url": receiver.url}).model_dump(
                mode="json", exclude_none=True
            )
            kinds: dict[str, list[str]] = {"completed": [], "suspended": [], "queued": []}
            for kind in ("completed", "suspended"):
                for i in range(per_kind):
                    # (each template's copies share its metadata: the runs list's filter)
                    payload = {**body, "metadata": {"template": f"{kind[0]}{i}"}}
                    if kind == "suspended":
                        payload["expires_in"] = 365 * 86400
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
            while len(receiver.delivered) < 3 * per_kind and time.monotonic() < deadline:
                time.sleep(0.1)
            service.stop_workers()
            for i in range(per_kind):
                payload = {**body, "metadata": {"template": f"q{i}"}}
                kinds["queued"].append(client.post("/v1/runs", json=payload).json()["id"])
        finally:
            service.stop()
    return kinds


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


def copy_runs(
    url: str,
    templates: dict[str, list[str]],
    completed: int,
    suspended: int = SUSPENDED,
    queued: int = QUEUED,
) -> None:
    """`completed` completed copies, and the backlog (`suspended`, `queued`): copy g of a
    kind has the same id and times in every database seeded with it."""
    counts = {"completed": completed, "suspended": suspended, "queued": queued}
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


def copies(url: str, kind: str = "completed") -> int:
    """How many copies of a kind (completed, suspended, queued) a seeded database holds."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(f"SELECT count(*) FROM runs WHERE id ~ '^run_{kind[0]}[0-9]{{20}}$'")
        return int(row.fetchone()[0])  # type: ignore[index]


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
