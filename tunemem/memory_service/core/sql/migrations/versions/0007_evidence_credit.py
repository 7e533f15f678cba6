"""evidence credit: an outcome's configuration, its lessons' verdicts and its repeated timings

Adds `config`, `credit`, `timings_ms`, `latency_spread_ms` and `repetitions` to outcomes.
Outcomes from before carry no configuration (credit as before: every used lesson receives the
stage reward) and one timing.

Revision ID: 0007_evidence_credit
Revises: 0006
Create Date: 2026-12-06 06:20:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_evidence_credit"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("outcome") as batch:
        batch.add_column(sa.Column("config", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("credit", sa.JSON(), nullable=False, server_default="{}"))
        batch.add_column(sa.Column("timings_ms", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("latency_spread_ms", sa.Float(), nullable=True))
        batch.add_column(sa.Column("repetitions", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("outcome") as batch:
        for column in ("repetitions", "latency_spread_ms", "timings_ms", "credit", "config"):
            batch.drop_column(column)
