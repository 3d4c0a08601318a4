"""`agentrun operators …` as real processes: the password comes from stdin (or a prompt),
never the command line; what the commands print; what they change (read back through the
service). On PostgreSQL only: the accounts' store is tested on both back ends in
tests/tenancy/test_operators.py, and each command here is a process start."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import AsyncIterator

import pytest

from app.cli.operators import read_password
from app.clock import SYSTEM_CLOCK
from app.core.scope import Scope
from app.store.runs import RunStore
from app.tenancy.access import Role
from app.tenancy.operators import OperatorService, hasher_for
from tests.e2e.processes import AGENTRUN
from tests.people import PASSWORD, TENANT, reset_people


@pytest.fixture
def database_url(postgres_url: str) -> str:
    return postgres_url


@pytest.fixture
async def people(store: RunStore) -> AsyncIterator[OperatorService]:
    await reset_people(store)
    yield OperatorService(store, hasher=hasher_for(8192, 1), clock=SYSTEM_CLOCK)
    await reset_people(store)


def agentrun(database_url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTRUN_DATABASE_URL": database_url}
    env.pop("AGENTRUN_API_KEYS", None)
    env["AGENTRUN_PASSWORD_HASH_MEMORY_KIB"], env["AGENTRUN_PASSWORD_HASH_TIME_COST"] = "8192", "1"
    return subprocess.run(
        [AGENTRUN, "operators", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


async def test_create_list_and_sign_in(database_url: str, people: OperatorService) -> None:
    made = agentrun(
        database_url,
        "create", "--tenant", TENANT, "--username", "alice", "--role", "operator",
        stdin=PASSWORD + "\n",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "created alice (operator of tenant acme)" in made.stdout
    assert "user:alice" in made.stdout and PASSWORD not in made.stdout + made.stderr
    assert await people.sign_in("alice", PASSWORD) is not None  # the newline is not in it
    listed = agentrun(database_url, "list")
    assert listed.returncode == 0, listed.stderr
    header, row = listed.stdout.splitlines()
    assert header.split() == ["USERNAME", "TENANT", "ROLE", "STATUS", "SESSIONS", "CREATED"]
    assert row.split()[:5] == ["alice", TENANT, "operator", "active", "1"]
    assert agentrun(database_url, "list", "--tenant", "default").stdout.strip() == "no accounts"


async def test_refusals_exit_1_and_say_why(database_url: str, people: OperatorService) -> None:
    short = agentrun(
        database_url, "create", "--username", "bob", "--role", "viewer", stdin="short\n"
    )
    assert short.returncode == 1 and "at least 10 characters" in short.stderr
    tenant = agentrun(
        database_url,
        "create", "--tenant", "nope", "--username", "bob", "--role", "viewer",
        stdin=PASSWORD,
    )  # fmt: skip
    assert tenant.returncode == 1 and "no tenant 'nope'" in tenant.stderr
    missing = agentrun(database_url, "disable", "nobody")
    assert missing.returncode == 1 and "no account 'nobody'" in missing.stderr
    # There is no way to pass the password on the command line.
    argv = agentrun(
        database_url,
        "create", "--username", "bob", "--role", "viewer", "--password", PASSWORD,
    )  # fmt: skip
    assert argv.returncode == 2 and "unrecognized arguments" in argv.stderr
    assert await people.list_accounts(scope=Scope.ALL) == []


async def test_sessions_disable_password_and_role(
    database_url: str, people: OperatorService
) -> None:
    await people.create("alice", PASSWORD, role="operator")
    first = await people.sign_in("alice", PASSWORD)
    second = await people.sign_in("alice", PASSWORD)
    assert first and second
    listed = agentrun(database_url, "sessions", "list", "alice")
    assert listed.returncode == 0, listed.stderr
    ids = [line.split()[0] for line in listed.stdout.splitlines()[1:]]
    assert len(ids) == 2 and first.secret not in listed.stdout
    one = agentrun(database_url, "sessions", "revoke", "alice", "--session", ids[0])
    assert one.returncode == 0 and "1 session(s) of alice revoked" in one.stdout
    left = [s for s in (first, second) if await people.principal(s.secret) is not None]
    assert len(left) == 1
    role = agentrun(database_url, "set-role", "alice", "viewer")
    assert role.returncode == 0, role.stderr
    found = await people.principal(left[0].secret)
    assert found is not None and found.role == Role.VIEWER
    disabled = agentrun(database_url, "disable", "alice")
    assert disabled.returncode == 0 and "1 session(s) ended" in disabled.stdout
    assert await people.principal(left[0].secret) is None
    assert await people.sign_in("alice", PASSWORD) is None
    assert agentrun(database_url, "enable", "alice").returncode == 0
    changed = agentrun(database_url, "password", "alice", stdin="a new long password\n")
    assert changed.returncode == 0, changed.stderr
    assert await people.sign_in("alice", PASSWORD) is None
    assert await people.sign_in("alice", "a new long password") is not None
    everything = agentrun(database_url, "sessions", "revoke", "alice")
    assert everything.returncode == 0 and "1 session(s) of alice revoked" in everything.stdout


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_password_is_asked_twice() -> None:
    answers = iter(["pass phrase one", "pass phrase one"])
    prompts: list[str] = []

    def prompt(text: str) -> str:
        prompts.append(text)
        return next(answers)

    assert read_password(Terminal(), prompt) == "pass phrase one"
    assert prompts == ["Password: ", "Password again: "]
    differ = iter(["one password", "another one"])
    with pytest.raises(ValueError, match="differ"):
        read_password(Terminal(), lambda _: next(differ))
    assert read_password(io.StringIO("from a pipe\nsecond line\n")) == "from a pipe"
