"""Results keep their headline (``records.Headline`` as JSON): the one number per run that
the gate judges instead of the samples for LoadGen server and offline points. Results stored
before it have none (NULL), as records without a headline do.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-13
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch_op:
        batch_op.add_column(sa.Column("headline", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("results") as batch_op:
        batch_op.drop_column("headline")
