"""Phases of a task, a submission's phase, the runs a team selected as final, browser sign-ins.

An existing database is upgraded in place at start-up: its submissions keep no phase
(``phase_id`` NULL) and are not selected; its tasks have no phases until the organizer
makes some, so they behave as before.

Revision ID: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "phases",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.String(100), nullable=False, index=True),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(100), nullable=False),
        sa.Column("opens", sa.DateTime, nullable=True),
        sa.Column("closes", sa.DateTime, nullable=True),
        sa.Column("daily_limit", sa.Integer, nullable=True),
        sa.Column("total_limit", sa.Integer, nullable=True),
        sa.Column("scores_visible", sa.Boolean, nullable=False),
        sa.Column("leaderboard_public", sa.Boolean, nullable=False),
        sa.Column("max_selected", sa.Integer, nullable=True),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.UniqueConstraint("task_id", "name", name="uq_phases_task_name"),
    )
    op.create_table(
        "sign_ins",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("token_id", sa.Integer, sa.ForeignKey("tokens.id"), nullable=False, index=True),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("expires", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    with op.batch_alter_table("submissions") as batch:
        batch.add_column(sa.Column("phase_id", sa.Integer, nullable=True))
        batch.add_column(sa.Column("selected", sa.Boolean, nullable=False, server_default=sa.false()))
        batch.create_foreign_key("fk_submissions_phase", "phases", ["phase_id"], ["id"])
        batch.create_index("ix_submissions_phase_id", ["phase_id"])


def downgrade() -> None:
    with op.batch_alter_table("submissions") as batch:
        batch.drop_index("ix_submissions_phase_id")
        batch.drop_constraint("fk_submissions_phase", type_="foreignkey")
        batch.drop_column("selected")
        batch.drop_column("phase_id")
    op.drop_table("sign_ins")
    op.drop_table("phases")
