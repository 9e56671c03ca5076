"""Baselines kept in the database: one perfsuite.baseline/2 document per hardware class and
profile, so --perf-baseline takes a database URL as it takes a folder.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("hardware_class", sa.String(length=128), nullable=False),
        sa.Column("profile", sa.String(length=64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("saved_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_baselines")),
        sa.UniqueConstraint("hardware_class", "profile", name=op.f("uq_baselines_hardware_class")),
    )


def downgrade() -> None:
    op.drop_table("baselines")
