"""The first revision: the schema as it stood when migrations began (the layout move).

Stores created before then hold exactly this schema; `store.migrate` stamps them with it.

Revision ID: 0001
Revises: (none)
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "apikey",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("role", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("key_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("apikey", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_apikey_key_hash"), ["key_hash"], unique=True)

    op.create_table(
        "attempt",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("trajectory_id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("code", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("compiled", sa.Boolean(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=True),
        sa.Column("error_category", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("latency_min_ms", sa.Float(), nullable=True),
        sa.Column("repetitions", sa.Integer(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_attempt_trajectory_id"), ["trajectory_id"], unique=False
        )

    op.create_table(
        "lesson",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("kind", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("text", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("hint", sa.JSON(), nullable=True),
        sa.Column("code", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("content_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("applicability", sa.JSON(), nullable=False),
        sa.Column("op", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("chips", sqlmodel.sql.sqltypes.AutoString(length=2048), nullable=False),
        sa.Column("backends", sqlmodel.sql.sqltypes.AutoString(length=256), nullable=False),
        sa.Column("provenance", sa.JSON(), nullable=False),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant", "content_hash"),
    )
    with op.batch_alter_table("lesson", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_lesson_kind"), ["kind"], unique=False)
        batch_op.create_index(batch_op.f("ix_lesson_op"), ["op"], unique=False)
        batch_op.create_index(batch_op.f("ix_lesson_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_lesson_tenant"), ["tenant"], unique=False)

    op.create_table(
        "lessonrevision",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("lesson_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("text", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("applicability", sa.JSON(), nullable=False),
        sa.Column("hint", sa.JSON(), nullable=True),
        sa.Column("status", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("changed_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.Column("change", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("lessonrevision", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_lessonrevision_lesson_id"), ["lesson_id"], unique=False
        )

    op.create_table(
        "lessonvalue",
        sa.Column("lesson_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope", sqlmodel.sql.sqltypes.AutoString(length=160), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("q", sa.Float(), nullable=False),
        sa.Column("sumsq", sa.Float(), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("lesson_id", "stage", "scope"),
    )
    with op.batch_alter_table("lessonvalue", schema=None) as batch_op:
        batch_op.create_index("ix_lessonvalue_lesson_stage", ["lesson_id", "stage"], unique=False)

    op.create_table(
        "outcome",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("retrieval_id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("lessons", sa.JSON(), nullable=False),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("task_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("scope_chain", sa.JSON(), nullable=False),
        sa.Column("compiled", sa.Boolean(), nullable=False),
        sa.Column("correct", sa.Boolean(), nullable=True),
        sa.Column("latency_ms", sa.Float(), nullable=True),
        sa.Column("best_before_ms", sa.Float(), nullable=True),
        sa.Column("error", sqlmodel.sql.sqltypes.AutoString(), nullable=True),
        sa.Column("reward", sa.Float(), nullable=False),
        sa.Column("reporter", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("verified", sa.Boolean(), nullable=False),
        sa.Column("idempotency_key", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=True),
        sa.Column("response", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("tenant", "idempotency_key"),
    )
    with op.batch_alter_table("outcome", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_outcome_retrieval_id"), ["retrieval_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_outcome_tenant"), ["tenant"], unique=False)

    op.create_table(
        "retrieval",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=36), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("query", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("task", sa.JSON(), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("stage", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("scope_chain", sa.JSON(), nullable=False),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.Column("settings", sa.JSON(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("retrieval", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_retrieval_tenant"), ["tenant"], unique=False)

    op.create_table(
        "taskrewardstat",
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("task_key", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("n", sa.Integer(), nullable=False),
        sa.Column("mean", sa.Float(), nullable=False),
        sa.Column("m2", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("tenant", "task_key"),
    )
    op.create_table(
        "trajectory",
        sa.Column("id", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("tenant", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("source_format", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("source", sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column("op", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("chip", sqlmodel.sql.sqltypes.AutoString(length=128), nullable=False),
        sa.Column("backend", sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
        sa.Column("task", sa.JSON(), nullable=False),
        sa.Column("context", sa.JSON(), nullable=False),
        sa.Column("baseline_latency_ms", sa.Float(), nullable=True),
        sa.Column("evidence", sa.JSON(), nullable=False),
        sa.Column("synthetic", sa.Boolean(), nullable=False),
        sa.Column("n_attempts", sa.Integer(), nullable=False),
        sa.Column("created_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("trajectory", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_trajectory_chip"), ["chip"], unique=False)
        batch_op.create_index(batch_op.f("ix_trajectory_op"), ["op"], unique=False)
        batch_op.create_index(batch_op.f("ix_trajectory_tenant"), ["tenant"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("trajectory", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_trajectory_tenant"))
        batch_op.drop_index(batch_op.f("ix_trajectory_op"))
        batch_op.drop_index(batch_op.f("ix_trajectory_chip"))

    op.drop_table("trajectory")
    op.drop_table("taskrewardstat")
    with op.batch_alter_table("retrieval", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_retrieval_tenant"))

    op.drop_table("retrieval")
    with op.batch_alter_table("outcome", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_outcome_tenant"))
        batch_op.drop_index(batch_op.f("ix_outcome_retrieval_id"))

    op.drop_table("outcome")
    with op.batch_alter_table("lessonvalue", schema=None) as batch_op:
        batch_op.drop_index("ix_lessonvalue_lesson_stage")

    op.drop_table("lessonvalue")
    with op.batch_alter_table("lessonrevision", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lessonrevision_lesson_id"))

    op.drop_table("lessonrevision")
    with op.batch_alter_table("lesson", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_lesson_tenant"))
        batch_op.drop_index(batch_op.f("ix_lesson_status"))
        batch_op.drop_index(batch_op.f("ix_lesson_op"))
        batch_op.drop_index(batch_op.f("ix_lesson_kind"))

    op.drop_table("lesson")
    with op.batch_alter_table("attempt", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_attempt_trajectory_id"))

    op.drop_table("attempt")
    with op.batch_alter_table("apikey", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_apikey_key_hash"))

    op.drop_table("apikey")
