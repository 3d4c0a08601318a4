"""tool results keep their text as given (json, not jsonb, on PostgreSQL)

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-03 13:30:00

A round's answers are fed to the run from their rows (`app.service.recorded`), so what the
model is shown of a JSON tool output is what `tool_calls.result` gives back. `jsonb`
reorders an object's keys (shorter first); `json` keeps the text, so the model sees the
output in the order the executor sent it, as it did when the API process fed the results
of the request itself. Results stored before keep the order `jsonb` gave them. SQLite
stores JSON as text already: nothing to do there. The change rewrites `tool_calls` once.
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0022"
down_revision: str | None = "0021"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE tool_calls ALTER COLUMN result TYPE json USING result::json")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE tool_calls ALTER COLUMN result TYPE jsonb USING result::jsonb")
