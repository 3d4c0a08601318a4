"""the fold's work in a narrow table of its own

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-03 08:00:00

Finished runs the fold has not taken into the rollups are rows of `unfolded_runs`, written
by the change that ends a run (and by a ledger write on a run that had ended), deleted by
the fold. The fold no longer rewrites the run's row (`runs.counted_as`, a column of two
partial indexes' predicates, so never a HOT update); `ix_runs_unfolded` and
`ix_runs_recount` go. (Ledger rows are still marked `folded` as they fold.)

Stored runs move over as the fold would find them: finished and not folded (a row that
counts), retried since their fold (their count leaves `run_counts`; finished again, a row
that counts), folded with calls billed after their fold (a row for the calls).
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENDED_SQL = "status IN ('cancelled', 'completed', 'expired', 'failed')"
UNFOLDED = sa.text(f"{ENDED_SQL} AND counted_as IS NULL")
RECOUNT = sa.text("counted_as IS NOT NULL AND counted_as <> status")
COLUMNS = "run_id, tenant_id, status, ended_at, counts"
QUEUED = sa.text("status = 'queued'")


def upgrade() -> None:
    op.create_table(
        "unfolded_runs",
        sa.Column("run_id", sa.String(length=40), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("counts", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("run_id", name=op.f("pk_unfolded_runs")),
    )
    # Finished, not folded: the fold counts them (they ended when they last changed).
    op.execute(
        f"INSERT INTO unfolded_runs ({COLUMNS}) SELECT id, tenant_id, status, updated_at,"
        f" true FROM runs WHERE {ENDED_SQL} AND counted_as IS NULL"
    )
    # Retried since their fold: out of `run_counts` now (their folded calls are marked
    # `folded` already); those that finished again are counted by the next fold.
    op.execute(
        "UPDATE run_counts SET runs = runs - (SELECT count(*) FROM runs"
        " WHERE runs.tenant_id = run_counts.tenant_id AND runs.counted_as = run_counts.status"
        " AND runs.counted_as <> runs.status)"
    )
    op.execute(
        f"INSERT INTO unfolded_runs ({COLUMNS}) SELECT id, tenant_id, status, updated_at,"
        f" true FROM runs WHERE counted_as IS NOT NULL AND counted_as <> status"
        f" AND {ENDED_SQL}"
    )
    # Folded, with calls billed after the fold (a lost lease's): those calls fold next.
    op.execute(
        f"INSERT INTO unfolded_runs ({COLUMNS}) SELECT id, tenant_id, status, NULL, false"
        " FROM runs WHERE counted_as = status AND id IN"
        " (SELECT run_id FROM model_calls WHERE NOT folded)"
    )
    op.drop_index("ix_runs_recount", table_name="runs")
    op.drop_index("ix_runs_unfolded", table_name="runs")
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("counted_as")
    # (SQLite's batch copies the table and makes its indexes again, `priority DESC` of
    # the claim's index as plain `priority`: made again as revision 0017 made it.)
    op.drop_index("ix_runs_claim", table_name="runs")
    op.create_index(
        "ix_runs_claim",
        "runs",
        [sa.text("priority DESC"), "fair_rank", "available_at", "id"],
        unique=False,
        postgresql_where=QUEUED,
        sqlite_where=QUEUED,
    )


def downgrade() -> None:
    """`counted_as` again: the status of every finished run counted in `run_counts` (not
    one whose row counts)."""
    op.add_column("runs", sa.Column("counted_as", sa.String(length=20), nullable=True))
    op.execute(
        f"UPDATE runs SET counted_as = status WHERE {ENDED_SQL} AND id NOT IN"
        " (SELECT run_id FROM unfolded_runs WHERE counts)"
    )
    op.create_index(
        "ix_runs_unfolded",
        "runs",
        ["status", "updated_at"],
        postgresql_where=UNFOLDED,
        sqlite_where=UNFOLDED,
    )
    op.create_index(
        "ix_runs_recount", "runs", ["counted_as"], postgresql_where=RECOUNT, sqlite_where=RECOUNT
    )
    op.drop_table("unfolded_runs")
