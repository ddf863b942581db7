"""Compute workers: the worker a submission runs on, and the job sent to the workers.

Revision ID: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("worker", sa.String(200), nullable=True))
        batch.add_column(sa.Column("job", sa.JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_column("job")
        batch.drop_column("worker")
