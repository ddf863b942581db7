"""The submission service: teams submit images, the server runs them sandboxed, organizers publish.

An HTTP application (FastAPI) over a database (SQLAlchemy, migrated by Alembic):
``models`` (tables), ``db`` (engine, sessions, migrations), ``tokens`` (roles),
``uploads`` (docker save archives → checked → loaded once by digest), ``executor``
(the local pool that calls :func:`sharedtask.sandbox.run` and the official
evaluation), ``pages`` (server-rendered HTML) and ``app`` (routes). It has no
validation or scoring code of its own: every verdict comes from the sandbox,
the validator and the evaluator that the CLI uses.
"""

from __future__ import annotations
