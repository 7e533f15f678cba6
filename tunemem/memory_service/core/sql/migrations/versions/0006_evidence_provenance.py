"""evidence provenance: how each trajectory's and outcome's numbers were obtained

Adds `origin`, `coverage` and `device_reported` to trajectories and `origin`, `device_reported`
to outcomes (`ingest.provenance`). Rows from before are `unstated`, except what their format
tells: a file reader's trajectories are `recorded` (vLLM's configs `shipped`) and `partial`,
and a Kernel Tuner cache is `complete` or `partial` as its reader decides today, from the
attempts it stored.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-06 06:10:00.000000
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

from tunemem.ingest.provenance import READER_ORIGINS, kerneltuner_coverage

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _text(length: int) -> sqlmodel.sql.sqltypes.AutoString:
    return sqlmodel.sql.sqltypes.AutoString(length=length)


def upgrade() -> None:
    with op.batch_alter_table("trajectory") as batch:
        batch.add_column(sa.Column("origin", _text(16), nullable=False, server_default="unstated"))
        batch.add_column(
            sa.Column("coverage", _text(16), nullable=False, server_default="unstated")
        )
        batch.add_column(sa.Column("device_reported", _text(256), nullable=True))
    with op.batch_alter_table("outcome") as batch:
        batch.add_column(sa.Column("origin", _text(16), nullable=False, server_default="unstated"))
        batch.add_column(sa.Column("device_reported", _text(256), nullable=True))
    bind = op.get_bind()
    trajectory = sa.table(
        "trajectory",
        sa.column("id", sa.String),
        sa.column("source_format", sa.String),
        sa.column("origin", sa.String),
        sa.column("coverage", sa.String),
        sa.column("task", sa.JSON),
        sa.column("evidence", sa.JSON),
    )
    attempt = sa.table(
        "attempt",
        sa.column("trajectory_id", sa.String),
        sa.column("index", sa.Integer),
        sa.column("params", sa.JSON),
    )
    for fmt, origin in READER_ORIGINS.items():
        bind.execute(
            trajectory.update()
            .where(trajectory.c.source_format == fmt)
            .values(origin=origin, coverage="partial")
        )
    caches = bind.execute(
        sa.select(trajectory.c.id, trajectory.c.task, trajectory.c.evidence).where(
            trajectory.c.source_format == "kerneltuner"
        )
    ).all()
    for trajectory_id, task, evidence in caches:
        declared = (evidence or {}).get("tune_params") or {}
        keys = ((task or {}).get("signature") or {}).get("tune_params_keys") or list(declared)
        params = [
            row[0] or {}
            for row in bind.execute(
                sa.select(attempt.c.params)
                .where(attempt.c.trajectory_id == trajectory_id)
                .order_by(attempt.c.index)
            )
        ]
        coverage, _ = kerneltuner_coverage(declared, keys, params)
        bind.execute(
            trajectory.update().where(trajectory.c.id == trajectory_id).values(coverage=coverage)
        )


def downgrade() -> None:
    with op.batch_alter_table("outcome") as batch:
        batch.drop_column("device_reported")
        batch.drop_column("origin")
    with op.batch_alter_table("trajectory") as batch:
        batch.drop_column("device_reported")
        batch.drop_column("coverage")
        batch.drop_column("origin")
