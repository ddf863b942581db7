"""The MathQA evaluation suite's data files for tests, copied into a test's tmp folder only.

The files are not shipped (the suite's repository, ongzexuan/mathqa-evaluation, carries no
licence) and never committed. They come from ``SHAREDTASK_MATHQA_SUITE`` (a folder holding
the suite's ``data/`` files, e.g. a clone's ``data``), or else from a local git copy of the
repository, ``SHAREDTASK_MATHQA_GIT`` (a git directory, e.g. ``clone/.git``), read with ``git show COMMIT:data/NAME`` at the
commit the dataset registry pins (tasks/datasets/mathqa.yml). Without either the tests
that need them are skipped with that reason.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

FILES = ("test.json", "test_broken.txt", "challenge_test.json", "challenge_broken.txt")
COMMIT = "9842c467da121c3fa2f53ce4d2f18ecf49f164a0"  # the registry's sha256 are of the files at this commit
REASON = ("the MathQA suite's files are not shipped: set SHAREDTASK_MATHQA_SUITE to a folder holding "
          f"{', '.join(FILES)}, or SHAREDTASK_MATHQA_GIT to a git copy of ongzexuan/mathqa-evaluation")


def available() -> bool:
    folder = os.environ.get("SHAREDTASK_MATHQA_SUITE")
    if folder:
        return all((Path(folder) / name).is_file() for name in FILES)
    git = os.environ.get("SHAREDTASK_MATHQA_GIT")
    return bool(git) and Path(git).is_dir() and subprocess.run(["git", "--git-dir", git, "cat-file", "-e", f"{COMMIT}^{{commit}}"],
                                                 capture_output=True).returncode == 0


def copy_to(dest: Path) -> Path:
    """``dest`` holding the four files (skips the test when there is no source)."""
    if not available():
        pytest.skip(REASON)
    dest.mkdir(parents=True, exist_ok=True)
    folder = os.environ.get("SHAREDTASK_MATHQA_SUITE")
    for name in FILES:
        if folder:
            (dest / name).write_bytes((Path(folder) / name).read_bytes())
        else:
            git = os.environ["SHAREDTASK_MATHQA_GIT"]
            data = subprocess.run(["git", "--git-dir", git, "show", f"{COMMIT}:data/{name}"], capture_output=True,
                                  check=True).stdout
            (dest / name).write_bytes(data)
    return dest
