"""`sharedtask data import --from DIR` copies regular files only (issue 26): a link, a FIFO or a
device in the folder is refused with its name, and nothing outside the folder is ever read."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.data import get_dataset, store

DATASET = "mathqa-test/test"  # registry names: test.json, test_broken.txt (tasks/datasets/mathqa.yml)


@pytest.fixture()
def data_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    return tmp_path / "store"


def _import(src: Path, capsys) -> tuple[int, str]:
    """The CLI's exit code and error, run in a thread so that a FIFO that blocked would fail, not hang."""
    box: dict[str, int] = {}
    thread = threading.Thread(target=lambda: box.setdefault("code", main(["data", "import", DATASET, "--from",
                                                                              str(src)])), daemon=True)
    thread.start()
    thread.join(120)  # a hang bound, not a speed test
    assert not thread.is_alive(), "data import blocked (it opened a FIFO?)"
    return box["code"], capsys.readouterr().err


def _nothing_placed() -> bool:
    folder = store.dataset_dir(get_dataset(DATASET))
    return not folder.exists() or not [p for p in folder.rglob("*") if p.is_file() and p.name != "manifest.json"]


@pytest.mark.parametrize("make", ["symlink", "fifo", "symlinked-folder"])
def test_a_link_or_a_fifo_in_the_source_is_refused_by_name(data_store, tmp_path, capsys, make):
    src = tmp_path / "release"
    src.mkdir()
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"secret": 1}')
    if make == "symlink":
        (src / "test.json").symlink_to(secret)
        named = src / "test.json"
    elif make == "fifo":
        os.mkfifo(src / "test.json")
        named = src / "test.json"
    else:
        outside = tmp_path / "outside"
        outside.mkdir()
        (outside / "test.json").write_text("{}")
        src.rmdir()
        src.parent.joinpath("release-parent").mkdir()
        src = src.parent / "release-parent"
        (src / "data").symlink_to(outside)
        code, err = _import(src / "data", capsys)  # the folder the user names may itself be a link: fine
        assert "is a symbolic link" not in err
        (src / "test.json").symlink_to(outside / "test.json")
        named = src / "test.json"
    code, err = _import(src, capsys)
    assert code == 2 and str(named) in err and "regular files only" in err and "Traceback" not in err
    assert ("a symbolic link" if make != "fifo" else "a FIFO") in err
    assert _nothing_placed()


def test_a_device_given_as_the_file_is_refused(data_store, capsys):
    code, err = _import(Path("/dev/zero"), capsys)
    assert code == 2 and "/dev/zero is a device" in err
