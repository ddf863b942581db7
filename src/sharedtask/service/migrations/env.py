"""Alembic environment: the service passes its own connection (see ``sharedtask.service.db``)."""

from __future__ import annotations

from alembic import context

from sharedtask.service.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
