"""Published first stages (re-rankers' ``$inputRun``) and the stage a submission re-ranks.

An existing database is upgraded in place at start-up: it has no stages, and its
submissions re-rank none (``stage_id`` and ``input_run`` NULL), so they run as before.

Revision ID: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "stages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.String(100), nullable=False, index=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(100), nullable=False),
        sa.Column("submission_id", sa.Integer, nullable=True),
        sa.Column("run_sha256", sa.String(64), nullable=False),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("depth", sa.Integer, nullable=False),
        sa.Column("topics", sa.Integer, nullable=False),
        sa.Column("candidates", sa.Integer, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.UniqueConstraint("task_id", "name", "dataset", name="uq_stages_task_name_dataset"),
    )
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("stage_id", sa.Integer, nullable=True))
        batch.add_column(sa.Column("input_run", sa.String(64), nullable=True))
        batch.create_foreign_key("fk_submissions_stage", "stages", ["stage_id"], ["id"])


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_constraint("fk_submissions_stage", type_="foreignkey")
        batch.drop_column("input_run")
        batch.drop_column("stage_id")
    op.drop_table("stages")
