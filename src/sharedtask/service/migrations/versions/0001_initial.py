"""The first schema: teams, tokens, images, submissions, task settings.

Revision ID: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "teams",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("organizer", sa.Boolean, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
    )
    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_table(
        "images",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("archive_sha256", sa.String(64), nullable=True, unique=True),
        sa.Column("reference", sa.String(300), nullable=True, unique=True),
        sa.Column("docker_id", sa.String(100), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
    )
    op.create_table(
        "submissions",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False, index=True),
        sa.Column("task_id", sa.String(100), nullable=False, index=True),
        sa.Column("image_id", sa.Integer, sa.ForeignKey("images.id"), nullable=False),
        sa.Column("image_name", sa.String(300), nullable=False),
        sa.Column("tag", sa.String(100), nullable=False),
        sa.Column("command", sa.Text, nullable=True),
        sa.Column("status", sa.String(20), nullable=False, index=True),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False, index=True),
        sa.Column("started", sa.DateTime, nullable=True),
        sa.Column("finished", sa.DateTime, nullable=True),
        sa.Column("run_status", sa.String(30), nullable=True),
        sa.Column("valid", sa.Boolean, nullable=True),
        sa.Column("run_dir", sa.Text, nullable=True),
        sa.Column("validation", sa.JSON, nullable=True),
        sa.Column("record", sa.JSON, nullable=True),
        sa.Column("scores", sa.JSON, nullable=True),
        sa.Column("per_topic", sa.JSON, nullable=True),
        sa.Column("notes", sa.JSON, nullable=True),
        sa.Column("hidden_reason", sa.Text, nullable=True),
    )
    op.create_table(
        "task_settings",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.String(100), nullable=False, unique=True),
        sa.Column("opens", sa.DateTime, nullable=True),
        sa.Column("closes", sa.DateTime, nullable=True),
        sa.Column("daily_limit", sa.Integer, nullable=True),
        sa.Column("published", sa.Boolean, nullable=False),
    )


def downgrade() -> None:
    for table in ("task_settings", "submissions", "images", "tokens", "teams"):
        op.drop_table(table)
