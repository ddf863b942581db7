"""Participant scaffold: ``sharedtask new-submission --task ID DIR`` writes a ready-to-run submission.

The files come from ``templates/`` (package data), filled in with
:class:`string.Template` using a ``%%{name}`` delimiter, which cannot clash with the
``$inputDataset``/``${BASE_IMAGE}`` of shell, Dockerfiles and Python.
"""

from sharedtask.scaffold.writer import Submission, plan_submission, write_submission

__all__ = ["Submission", "plan_submission", "write_submission"]
