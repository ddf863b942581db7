"""``python -m sharedtask.samples [NAME...]``: regenerate the bundled sample datasets."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Sequence

from sharedtask.samples import SAMPLE_NAMES, default_root, write_sample


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharedtask.samples", description="Regenerate the bundled sample datasets.")
    parser.add_argument("--out", type=Path, default=None, help="folder to write <name>/ into (default: tasks/samples)")
    parser.add_argument("names", nargs="*", default=list(SAMPLE_NAMES), help="samples to write (default: all)")
    args = parser.parse_args(argv)
    root = args.out or default_root()
    for name in args.names:
        if (root / name).is_dir():  # drop stale files of an older generator version
            shutil.rmtree(root / name)
        files = write_sample(name, root / name)
        size = sum(f.stat().st_size for f in files)
        print(f"{root / name}: {len(files)} files, {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
