"""Run submission images the way TIRA does, sandboxed, and record what happened.

- :func:`run` (``api``): task defaults → container → validation → run record;
- :mod:`.runner`: the container execution itself (mounts, limits, watching, cleanup);
- :mod:`.policy`: limits and isolation options; :mod:`.record`: run-record.json
  and ir-metadata.yml; :mod:`.live`: the live panel and summaries in the terminal.
"""

from sharedtask.sandbox.api import SandboxRun, run
from sharedtask.sandbox.policy import Limits, Policy
from sharedtask.sandbox.runner import RunRequest, RunResult, run_container

__all__ = ["Limits", "Policy", "RunRequest", "RunResult", "SandboxRun", "run", "run_container"]
