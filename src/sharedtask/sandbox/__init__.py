"""Run submission images the way TIRA does, sandboxed, and record what happened.

- :func:`run` (``api``): task defaults → container → validation → run record;
- :mod:`.runner`: the container execution itself (mounts, limits, watching, cleanup);
- :mod:`.policy`: limits and isolation options; :mod:`.record`: run-record.json
  and ir-metadata.yml; :mod:`.live`: the live panel and summaries in the terminal;
- :mod:`.options`: the sandbox options, declared once for ``run``, the CLI and the job schema;
- :mod:`.interrupts`: one answer to an interrupt at every step of a run.

The names below are loaded when first used (PEP 562): a light submodule (``options``,
``interrupts``) is imported by the CLI's parser without the runner and its dependencies.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"SandboxRun": "api", "run": "api", "Limits": "policy", "Policy": "policy",
            "RunRequest": "runner", "RunResult": "runner", "run_container": "runner"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'sharedtask.sandbox' has no attribute {name!r}")
    return getattr(importlib.import_module(f"sharedtask.sandbox.{module}"), name)
