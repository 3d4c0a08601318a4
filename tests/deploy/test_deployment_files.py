"""No Docker engine runs here: the deployment files are checked by parsing them, and the
commands they run are exercised by the end-to-end tests (agentrun api/worker/migrate)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent.parent


def compose() -> dict:  # type: ignore[type-arg]
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())  # type: ignore[no-any-return]


def test_compose_has_postgres_migrate_api_and_scalable_worker() -> None:
    services = compose()["services"]
    assert set(services) == {"postgres", "migrate", "api", "worker"}
    pg = services["postgres"]
    assert "pg_isready" in " ".join(pg["healthcheck"]["test"])
    assert any(v.startswith("pgdata:") for v in pg["volumes"])
    assert services["migrate"]["command"] == ["agentrun", "migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("api", "worker"):
        assert (
            services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
        )
        env = services[name]["environment"]
        assert env["AGENTRUN_DATABASE_URL"].startswith("postgresql://")
        assert "AGENTRUN_API_KEYS" in env
    assert services["api"]["command"][:2] == ["agentrun", "api"]
    assert services["worker"]["command"][:2] == ["agentrun", "worker"]
    assert "ports" not in services["worker"], "workers must scale without port clashes"
    assert "container_name" not in services["worker"]


def test_every_compose_command_is_a_real_cli_command() -> None:
    from app.cli import main

    for service in compose()["services"].values():
        command = service.get("command")
        if command and command[0] == "agentrun":
            with pytest.raises(SystemExit) as done:
                main([*command[1:], "--help"])
            assert done.value.code == 0


def test_dockerfile_is_multi_stage_and_non_root() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("\nFROM ") + text.startswith("FROM ") >= 2
    assert "\nUSER agentrun" in text
    assert 'CMD ["agentrun", "api"' in text
    assert "COPY alembic ./alembic" in text


def test_compose_file_validates_with_docker_compose() -> None:
    if shutil.which("docker-compose") is None:
        if os.environ.get("CI"):
            pytest.fail("docker-compose is missing: .ci/run installs it from Debian")
        pytest.skip("docker-compose not installed (apt-get install docker-compose)")
    result = subprocess.run(
        ["docker-compose", "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
        env={"AGENTRUN_API_KEYS": "k", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr


def test_the_image_installs_the_client_for_agentrun_runs() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "COPY client ./client" in text
    assert "pip install . ./client" in text


@pytest.mark.parametrize("compose", ["docker compose", "docker-compose"])
def test_make_up_and_down_run_either_compose(compose: str) -> None:
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    for target, expected in (
        ("up", f"{compose} up -d --build --scale worker=3"),
        ("down", f"{compose} down"),
    ):
        done = subprocess.run(
            ["make", "-s", "-n", "-C", str(ROOT), target, f"COMPOSE={compose}", "WORKERS=3"],
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == expected
