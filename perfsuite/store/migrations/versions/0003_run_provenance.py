"""Runs keep the rest of their provenance beside the commit: branch, dirty flag and the
source repository, as the run summary records them.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-06
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        batch_op.add_column(sa.Column("branch", sa.String(length=255)))
        batch_op.add_column(sa.Column("dirty", sa.Boolean()))
        batch_op.add_column(sa.Column("repository", sa.Text()))


def downgrade() -> None:
    with op.batch_alter_table("runs") as batch_op:
        for column in ("repository", "dirty", "branch"):
            batch_op.drop_column(column)
