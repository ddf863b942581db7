"""``python -m sharedtask.samples [NAME...]``: regenerate the bundled sample datasets."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Sequence

from sharedtask.cli.options import add_output
from sharedtask.samples import SAMPLE_NAMES, default_root, write_sample
from sharedtask.units import format_size


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharedtask.samples", description="Regenerate the bundled sample datasets.")
    add_output(parser, "folder to write <name>/ into (default: tasks/samples)")
    parser.add_argument("names", nargs="*", default=list(SAMPLE_NAMES), help="samples to write (default: all)")
    args = parser.parse_args(argv)
    root = args.output or default_root()
    for name in args.names:
        if (root / name).is_dir():  # drop stale files of an older generator version
            shutil.rmtree(root / name)
        files = write_sample(name, root / name)
        size = sum(f.stat().st_size for f in files)
        print(f"{root / name}: {len(files)} files, {format_size(size)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
