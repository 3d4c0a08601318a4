"""A private PostgreSQL cluster that a test may stop and start: `initdb` + `pg_ctl` on its
own port and socket directory, run as the `postgres` system user (initdb refuses root),
with password authentication so that the URLs the service logs carry a real password.

The machine's shared server on 5432 is never touched.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from tests.ports import free_port

BIN = Path(os.environ.get("AGENTRUN_PG_BIN", "/usr/lib/postgresql/15/bin"))
SYSTEM_USER = "postgres"


#: Server settings of every private cluster (a test may add or override some).
SETTINGS = {"fsync": "off", "full_page_writes": "off", "max_connections": "100"}


class PrivatePostgres:
    def __init__(
        self, root: Path, port: int, password: str, settings: Mapping[str, str] | None = None
    ) -> None:
        self.root = root
        self.data = root / "data"
        self.sockets = root / "sockets"
        self.port = port
        self.password = password
        self.settings = {**SETTINGS, **(settings or {})}

    @property
    def url(self) -> str:
        return f"postgresql://agentrun:{self.password}@127.0.0.1:{self.port}/agentrun"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(BIN / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = ["runuser", "-u", SYSTEM_USER, "--", *command]
        return subprocess.run(command, check=check, capture_output=True, text=True, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.sockets} -c listen_addresses=127.0.0.1 " + " ".join(
            f"-c {name}={value}" for name, value in self.settings.items()
        )
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "pg.log"),
            "-w", "-t", "30", "start",
        )  # fmt: skip

    def stop(self, mode: str = "immediate") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop")

    def psql(self, sql: str, database: str = "postgres") -> None:
        self._run(
            "psql", "-h", str(self.sockets), "-p", str(self.port), "-d", database,
            "-v", "ON_ERROR_STOP=1", "-c", sql,
        )  # fmt: skip


def available() -> bool:
    """Whether a private cluster can be started here. Under CI the answer is always yes:
    a machine without the binaries fails these tests instead of skipping them."""
    if os.environ.get("CI"):
        return True
    return _binaries()


def _binaries() -> bool:
    try:
        pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        return os.geteuid() != 0 and (BIN / "initdb").exists()
    return (BIN / "initdb").exists()


@contextmanager
def private_postgres(settings: Mapping[str, str] | None = None) -> Iterator[PrivatePostgres]:
    """A running private cluster with a database `agentrun` owned by a password user;
    `settings` (e.g. {"max_connections": "50"}) over SETTINGS."""
    root = Path(tempfile.mkdtemp(prefix="agentrun-pg-"))
    cluster = PrivatePostgres(root, free_port(), "pw-" + secrets.token_hex(12), settings)
    cluster.sockets.mkdir()
    if os.geteuid() == 0:
        user = pwd.getpwnam(SYSTEM_USER)
        for path in (root, cluster.sockets):
            os.chown(path, user.pw_uid, user.pw_gid)
    try:
        cluster._run(
            "initdb", "-D", str(cluster.data), "-U", SYSTEM_USER, "--auth-local=trust",
            "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions",
        )  # fmt: skip
        cluster.start()
        cluster.psql(f"CREATE ROLE agentrun LOGIN PASSWORD '{cluster.password}'")
        cluster.psql("CREATE DATABASE agentrun OWNER agentrun")
        yield cluster
    finally:
        cluster._run("pg_ctl", "-D", str(cluster.data), "-m", "immediate", "stop", check=False)
        shutil.rmtree(root, ignore_errors=True)
