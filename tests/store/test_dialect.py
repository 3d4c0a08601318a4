"""What differs between PostgreSQL and SQLite is decided in one place: the backends
(`app.store.backend`). No other store module asks which database it runs on or uses a
dialect's own statement forms; they go through the `Backend` protocol."""

from __future__ import annotations

import re
from pathlib import Path

import app.store

STORE = Path(app.store.__file__).parent

#: A module that branches on the dialect, or builds a dialect's own statement.
DIALECT = re.compile(
    r"is_postgres|is_sqlite|dialect\.name|\b_direct\b|DirectPool|"
    r"sqlalchemy\.dialects|with_for_update|pg_notify|import (asyncpg|aiosqlite|psycopg)"
)

#: The tables declare each dialect's variants of a column; the outage classifier knows
#: every driver's exceptions (it branches on none).
NOT_YET = {
    "schema/base.py",
    "errors.py",
}


def test_only_the_backends_know_the_dialect() -> None:
    found = []
    for path in sorted(STORE.rglob("*.py")):
        relative = path.relative_to(STORE)
        if relative.parts[0] == "backend" or str(relative) in NOT_YET:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if DIALECT.search(line):
                found.append(f"app/store/{relative}:{number}: {line.strip()}")
    assert found == []


def test_the_guard_sees_a_dialect_branch() -> None:
    """(The pattern catches what it is there for.)"""
    assert DIALECT.search("if self.is_postgres:")
    assert DIALECT.search('postgres = engine.dialect.name == "postgresql"')
    assert DIALECT.search("from sqlalchemy.dialects import postgresql")
    assert DIALECT.search("due = due.with_for_update(skip_locked=True)")
    assert not DIALECT.search("rows = await self.backend.fetch(stmt, params)")
