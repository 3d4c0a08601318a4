"""`agentrun keys …` and `agentrun tenants …` on both databases (in process: the same
`main` the console script runs)."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterator

import pytest

from app.cli import main
from app.settings import get_settings
from app.store.runs import RunStore

Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def cli(
    database_url: str,
    store: RunStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> Iterator[Run]:
    """Runs a command on the test database: (exit code, stdout, stderr)."""
    monkeypatch.setenv("AGENTRUN_DATABASE_URL", database_url)
    monkeypatch.delenv("AGENTRUN_API_KEYS", raising=False)
    get_settings.cache_clear()

    def run(*argv: str) -> tuple[int, str, str]:
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    yield run
    get_settings.cache_clear()


def test_keys_from_the_command_line(cli: Run) -> None:
    run = cli
    tenant = f"cli-{secrets.token_hex(3)}"
    assert run("tenants", "create", tenant, "--name", "Acme Inc", "--max-active-runs", "4")[0] == 0
    code, out, err = run(
        "keys", "create", "--tenant", tenant, "--role", "executor", "--name", "gpu-box-1"
    )
    assert code == 0, err
    secret = out.strip().splitlines()[-1]
    key_id = secret.split("_")[1]
    assert secret.startswith(f"ark_{key_id}_") and "shown this once" in err
    code, out, _ = run("keys", "list", "--json")
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert (row["id"], row["tenant"], row["role"], row["state"]) == (
        key_id,
        tenant,
        "executor",
        "active",
    )
    assert secret not in out and row["created_by"] == "cli"
    code, out, _ = run("keys", "rotate", key_id, "--grace", "30m")
    assert code == 0 and "keeps working until" in out
    new_secret = out.strip().splitlines()[-1]
    assert new_secret.startswith("ark_") and new_secret != secret
    table = run("keys", "list", "--tenant", tenant)[1]
    assert "expiring" in table and "active" in table and "gpu-box-1" in table
    assert run("keys", "revoke", key_id)[0] == 0
    assert "revoked" in run("keys", "list")[1]
    code, _, err = run("keys", "revoke", "0" * 16)
    assert code == 1 and "no key" in err
    code, _, err = run("keys", "create", "--tenant", "missing", "--role", "admin", "--name", "x")
    assert code == 1 and "no tenant 'missing'" in err
    with pytest.raises(SystemExit):
        run("keys", "create", "--role", "root", "--name", "x")


def test_tenants_from_the_command_line(cli: Run) -> None:
    run = cli
    tenant = f"cli-{secrets.token_hex(3)}"
    assert run("tenants", "create", tenant, "--daily-tokens", "1000")[0] == 0
    code, _, err = run("tenants", "create", tenant)
    assert code == 1 and "exists" in err
    code, out, _ = run(
        "tenants", "set", tenant, "--daily-cost-usd", "2.5", "--daily-tokens", "none", "--disable"
    )
    assert code == 0 and "disabled" in out
    rows = {r["id"]: r for r in map(json.loads, run("tenants", "list", "--json")[1].splitlines())}
    assert rows[tenant]["limits"] == {"daily_cost_usd": 2.5}
    assert rows[tenant]["disabled_at"] is not None and rows["default"]["disabled_at"] is None
    code, _, err = run("tenants", "set", tenant, "--max-active-runs", "0")
    assert code == 1 and "max_active_runs" in err
    code, _, err = run("tenants", "create", "Not_A_Slug")
    assert code == 1 and "tenant id" in err
