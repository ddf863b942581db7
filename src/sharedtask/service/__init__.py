"""The submission service: teams submit images, the server runs them sandboxed, organizers publish.

An HTTP application (FastAPI) over a database (SQLAlchemy, migrated by Alembic), cut by
domain: ``web`` (routes and pages; it imports the domain, never the reverse), ``runs``
(claims, the local pool and the compute workers, all through the executor seam of
:mod:`sharedtask.executor`), ``teams`` (tokens, sign-in), ``submissions``, ``phases`` and
``selection``, ``stages``, ``visibility``, ``archive``, ``uploads``, and ``state``,
``models``, ``db``. It has no validation or scoring code of its own: every verdict comes
from the sandbox, the validator and the evaluator that the CLI uses.
"""

from __future__ import annotations
