"""Provenance: a run on a registry dataset names the dataset id and the sha256 of every
input file it saw, in run-record.json and ir-metadata.yml (real Docker, real files)."""

from __future__ import annotations

import json

import pytest
import yaml

from sharedtask.cli import main
from sharedtask.data import get_dataset, store


@pytest.fixture
def assembled(tmp_path, monkeypatch, repo_root, capsys):
    monkeypatch.setenv("SHAREDTASK_DATA", str(tmp_path / "store"))
    release = tmp_path / "release"
    release.mkdir()
    (release / "Posts.V1.3.xml").write_bytes((repo_root / "tasks/samples/arqmath-task1/input/Posts.xml").read_bytes())
    assert main(["data", "import", "arqmath-3-task1/test", "--from", str(release)]) == 0
    capsys.readouterr()
    return store.dataset_dir(get_dataset("arqmath-3-task1/test")) / "input"


def test_provenance_of_an_assembled_input_folder(assembled, tmp_path):
    prov = store.provenance(assembled)
    assert prov["id"] == "arqmath-3-task1/test"
    assert prov["sha256"]["topics.xml"] == "fe6e0e2e3af41d1b84de05fb708066a2f1f12470e23d1587ae353cfe30fa8c54"
    assert set(prov["sha256"]) == {"topics.xml", "Posts.xml"}  # input only: the run never sees the truth
    assert store.provenance(tmp_path) is None


@pytest.mark.docker
def test_run_record_names_the_dataset_and_its_checksums(assembled, base_image, tmp_path):
    from sharedtask.sandbox import run

    out = run("arqmath-3-task1", base_image, command="cat $inputDataset/topics.xml > $outputDir/seen.txt",
              input_dir=assembled, output_dir=tmp_path / "run" / "output", timeout=60, memory="256m",
              validate=False)
    record = json.loads(out.record_path.read_text())
    assert record["dataset"]["registry"] == store.provenance(assembled)
    meta = yaml.safe_load((tmp_path / "run" / "ir-metadata.yml").read_text())
    assert meta["data"]["test collection"]["registry"]["id"] == "arqmath-3-task1/test"
    # the container saw the very bytes the record vouches for
    assert (tmp_path / "run/output/seen.txt").read_bytes() == (assembled / "topics.xml").read_bytes()
