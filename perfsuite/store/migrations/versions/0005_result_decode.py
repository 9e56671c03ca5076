"""Results keep their decode record (``records.DecodeRecord`` as JSON): a decode point's
TTFT, TPOT and fraction of the bandwidth roofline, the figures an export of a stored run
carries beside the headline. Results stored before it have none (NULL), as points other
than decode points do.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-07
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("results") as batch_op:
        batch_op.add_column(sa.Column("decode", sa.JSON()))


def downgrade() -> None:
    with op.batch_alter_table("results") as batch_op:
        batch_op.drop_column("decode")
