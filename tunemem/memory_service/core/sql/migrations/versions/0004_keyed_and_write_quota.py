"""keys fail closed and the write quota is shared: the store's flags (`keyed`) and the per-key
write buckets

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 19:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
import sqlmodel.sql.sqltypes
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "storeflag",
        sa.Column("name", sqlmodel.sql.sqltypes.AutoString(length=32), nullable=False),
        sa.Column("value", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("updated_at", sqlmodel.sql.sqltypes.UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    op.create_table(
        "writebucket",
        sa.Column("key_hash", sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("stamp", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("key_hash"),
    )
    # A store that has ever had a key (revoked ones included) stays keyed.
    op.execute(
        "INSERT INTO storeflag (name, value, updated_at) "
        "SELECT 'keyed', 'true', CURRENT_TIMESTAMP WHERE EXISTS (SELECT 1 FROM apikey)"
    )


def downgrade() -> None:
    op.drop_table("writebucket")
    op.drop_table("storeflag")
