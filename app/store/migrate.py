"""`agentrun migrate`: Alembic upgrade to head on the configured database."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config

from alembic import command

ROOT = Path(__file__).resolve().parent.parent.parent


def migrations_root() -> Path:
    """The folder holding alembic.ini and alembic/: the source checkout, or the working
    directory of an installed deployment (the Docker image's /app)."""
    for candidate in (ROOT, Path.cwd()):
        if (candidate / "alembic.ini").is_file() and (candidate / "alembic").is_dir():
            return candidate
    raise RuntimeError("alembic.ini and alembic/ not found next to the package or in the cwd")


def alembic_config(database_url: str) -> Config:
    root = migrations_root()
    cfg = Config(str(root / "alembic.ini"))
    cfg.set_main_option("script_location", str(root / "alembic"))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade_to_head(database_url: str) -> None:
    command.upgrade(alembic_config(database_url), "head")
