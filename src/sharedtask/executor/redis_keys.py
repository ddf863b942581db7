"""Where sharedtask keeps its own marks in the broker's Redis, and for how long.

Why a module of its own: the worker's task (:mod:`sharedtask.executor.celery_app`) and the job
claim (:mod:`sharedtask.executor.claims`) both name these keys, and the claim must not import
the Celery app that uses it (the import graph stays without cycles, tests/test_architecture.py).
"""

from __future__ import annotations

RESULT_TTL = 30 * 24 * 3600  # s results (and "submitted" marks) are kept in the backend
KEY_PREFIX = "sharedtask:"
