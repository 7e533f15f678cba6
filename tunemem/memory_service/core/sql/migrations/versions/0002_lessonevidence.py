"""LessonEvidence: outcomes per (lesson, stage, scope, toolchain), for toolchain staleness.

A materialised view of the outcome log (`values rebuild` recomputes it); an upgraded store
starts it empty, which is right: outcomes recorded before contexts named a toolchain have none.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "lessonevidence",
        sa.Column("lesson_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
        sa.Column("toolchain", sqlmodel.sql.sqltypes.AutoString(length=1024), nullable=False),
        sa.Column("versions", sa.JSON(), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("lesson_id", "stage", "scope", "toolchain"),
    )


def downgrade() -> None:
    op.drop_table("lessonevidence")
