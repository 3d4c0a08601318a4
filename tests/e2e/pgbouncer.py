"""A private PgBouncer in transaction mode in front of a private PostgreSQL cluster, for
the tests that show the service works through one (README, "Connection budget").

Like the cluster it runs as the `postgres` system user when the tests run as root
(PgBouncer refuses root). It forwards only the startup parameters it knows (no
`ignore_startup_parameters`), so a client that sends others fails to connect.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.e2e.private_postgres import SYSTEM_USER, PrivatePostgres
from tests.ports import free_port

BINARY = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"


def available() -> bool:
    """Whether PgBouncer is installed. Under CI (.ci/run installs it) always yes: a machine
    without it fails these tests instead of skipping them."""
    return bool(os.environ.get("CI")) or Path(BINARY).exists()


@dataclass(frozen=True, slots=True)
class PgBouncer:
    url: str  # what the service connects to
    log: Path


@contextmanager
def pgbouncer(upstream: PrivatePostgres, *, server_pool: int) -> Iterator[PgBouncer]:
    """A running PgBouncer (transaction mode, at most `server_pool` server connections)
    for upstream's database `agentrun`."""
    root = Path(tempfile.mkdtemp(prefix="agentrun-pgbouncer-"))
    port = free_port()
    (root / "users.txt").write_text(f'"agentrun" "{upstream.password}"\n')
    (root / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"agentrun = host=127.0.0.1 port={upstream.port} dbname=agentrun\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = scram-sha-256\nauth_file = {root / 'users.txt'}\n"
        f"pool_mode = transaction\ndefault_pool_size = {server_pool}\n"
        f"max_db_connections = {server_pool}\nmax_client_conn = 500\n"
        f"logfile = {root / 'pgbouncer.log'}\npidfile = {root / 'pgbouncer.pid'}\n"
    )
    command = [BINARY, "-d", str(root / "pgbouncer.ini")]
    if os.geteuid() == 0:
        user = pwd.getpwnam(SYSTEM_USER)
        for path in (root, *root.iterdir()):
            os.chown(path, user.pw_uid, user.pw_gid)
        command = ["runuser", "-u", SYSTEM_USER, "--", *command]
    subprocess.run(command, check=True, capture_output=True, timeout=30)
    try:
        url = f"postgresql://agentrun:{upstream.password}@127.0.0.1:{port}/agentrun"
        yield PgBouncer(url, root / "pgbouncer.log")
    finally:
        pid = root / "pgbouncer.pid"
        if pid.exists():
            os.kill(int(pid.read_text().strip()), 15)
        shutil.rmtree(root, ignore_errors=True)
