"""benchmarks/scale.py's data makers: the replicated args.me and the shifted-copy runs must be
valid inputs of the official formats (read back with our own readers and the validator), or
the scale figures measure something else."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from sharedtask.formats.argsme import read_argsme_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import scale  # noqa: E402

SAMPLE = ROOT / "tasks" / "samples" / "touche-2020"


def test_replicated_argsme_has_every_argument_once_per_copy_with_unique_linked_ids(tmp_path: Path) -> None:
    original = list(read_argsme_dir(SAMPLE / "input"))
    scale.replicate_argsme(SAMPLE, tmp_path / "3x", 3)
    copied = list(read_argsme_dir(tmp_path / "3x" / "input"))

    assert len(copied) == 3 * len(original)
    ids = [a.id for a in copied]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"S[0-9a-f]{8}-A[0-9a-f]{8}", i) for i in ids)
    known = set(ids)
    for a in copied:
        assert a.source_id == a.id[1:9]  # sourceId follows its argument's new id
        for neighbour in (a.previous_argument_id, a.next_argument_id):
            assert not neighbour or neighbour in known
    # each copy keeps the texts: every premise text occurs three times
    texts = Counter(a.premises[0].text for a in copied)
    assert texts == Counter({t: 3 * n for t, n in Counter(a.premises[0].text for a in original).items()})
    assert (tmp_path / "3x" / "input" / "topics.xml").read_bytes() == (SAMPLE / "input" / "topics.xml").read_bytes()


def test_too_many_copies_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most 16"):
        scale.replicate_argsme(SAMPLE, tmp_path / "x", 17)


def test_a_run_larger_than_the_base_is_shifted_copies_that_validate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scale, "DATA", tmp_path)
    monkeypatch.setattr(scale, "BASE", 3_000)  # 3 topics of 1,000 lines, copied twice
    run, qrels = scale.make_run(6_000)
    lines = run.read_text().splitlines()
    assert len(lines) == 6_000
    assert [t for t, _ in Counter(line.split()[0] for line in lines).items()] == ["1", "2", "3", "4", "5", "6"]
    base = (tmp_path / "scale-3k.run.txt").read_text().splitlines()
    assert [line.split(None, 1)[1] for line in lines[3_000:]] == [line.split(None, 1)[1] for line in base]
    assert {line.split()[0] for line in qrels.read_text().splitlines()} == {"1", "2", "3", "4", "5", "6"}
    done = subprocess.run([sys.executable, "-m", "sharedtask", "validate", str(run), "--task", "touche-2021-task1",
                           "--json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
