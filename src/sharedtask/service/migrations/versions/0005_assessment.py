"""Assessment (issue 37): assessors and their tokens and sign-ins, primary runs, pools, judging
campaigns and judgments. New tables only: an existing database is upgraded in place.

Revision ID: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assessors",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("created", sa.DateTime, nullable=False),
    )
    op.create_table(
        "assessor_tokens",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("assessor_id", sa.Integer, sa.ForeignKey("assessors.id"), nullable=False, index=True),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_table(
        "assessor_sign_ins",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False, unique=True),
        sa.Column("token_id", sa.Integer, sa.ForeignKey("assessor_tokens.id"), nullable=False, index=True),
        sa.Column("expires", sa.DateTime, nullable=False),
        sa.Column("revoked", sa.Boolean, nullable=False),
    )
    op.create_table(
        "primary_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("team_id", sa.Integer, sa.ForeignKey("teams.id"), nullable=False),
        sa.Column("task_id", sa.String(100), nullable=False),
        sa.Column("submission_id", sa.Integer, sa.ForeignKey("submissions.id"), nullable=False, unique=True),
        sa.UniqueConstraint("team_id", "task_id", name="uq_primary_runs_team_task"),
    )
    op.create_table(
        "pools",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.String(100), nullable=False, index=True),
        sa.Column("path", sa.Text, nullable=False),
        sa.Column("items", sa.Integer, nullable=False),
        sa.Column("topics", sa.Integer, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
    )
    op.create_table(
        "campaigns",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("task_id", sa.String(100), nullable=False, index=True),
        sa.Column("pool_id", sa.Integer, sa.ForeignKey("pools.id"), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("double_share", sa.Float, nullable=False),
        sa.Column("seed", sa.Integer, nullable=False),
        sa.Column("created", sa.DateTime, nullable=False),
        sa.Column("closed", sa.DateTime, nullable=True),
        sa.Column("qrels_path", sa.Text, nullable=True),
        sa.Column("qrels_sha256", sa.String(64), nullable=True),
        sa.Column("published", sa.Boolean, nullable=False),
    )
    op.create_table(
        "judgments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaigns.id"), nullable=False, index=True),
        sa.Column("topic", sa.String(100), nullable=False),
        sa.Column("item", sa.String(200), nullable=False),
        sa.Column("assessor_id", sa.Integer, sa.ForeignKey("assessors.id"), nullable=False, index=True),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("double", sa.Boolean, nullable=False),
        sa.Column("grade", sa.Integer, nullable=True),
        sa.Column("quality", sa.Integer, nullable=True),
        sa.Column("judged", sa.DateTime, nullable=True),
        sa.Column("saves", sa.Integer, nullable=False),
        sa.UniqueConstraint("campaign_id", "topic", "item", "assessor_id", name="uq_judgments_one_per_assessor"),
    )


def downgrade() -> None:
    for table in ("judgments", "campaigns", "pools", "primary_runs", "assessor_sign_ins", "assessor_tokens",
                  "assessors"):
        op.drop_table(table)
