"""`sharedtask reproduce RECORD` trusts nothing in the record (issue 26, "Boundaries": records).

Mounts, network and user are re-derived from the task's policy; a crafted record that asks
for more is refused in one line naming the field and ``--trust-record``, and honoured
with that flag. Real containers (the 2 MB busybox image of the distributed tests).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from distributed_helpers import REFERENCE, TASK, tiny_image  # noqa: F401 - fixture
from sharedtask.cli import main
from sharedtask.reproduce import RecordRefused, run_options
from sharedtask.spec import load_task

COMMAND = "cp /run.txt $outputDir/run.txt; ls $inputRun > $outputDir/seen.txt 2>&1; true"

CRAFTED = [
    ("dataset.input_run", lambda r: r["dataset"].update(input_run="/")),
    ("dataset.input_dir", lambda r: r["dataset"].update(input_dir="/")),
    ("policy.network", lambda r: r["policy"].update(network="host")),
    ("policy.user", lambda r: r["policy"].update(user="0")),
    ("policy.user", lambda r: r["policy"].update(user="root")),
    ("policy.runtime", lambda r: r["policy"].update(runtime="kata")),
    ("policy.limits.memory", lambda r: r["policy"]["limits"].update(memory=2**50)),
    ("policy.limits.timeout", lambda r: r["policy"]["limits"].update(timeout=10**9)),
]


def _record() -> dict:
    task = load_task(TASK)
    return {"task": TASK, "image": {"id": "x"}, "command": "true",
            "dataset": {"id": TASK, "input_dir": str(task.sample_dir / "input"), "input_run": None},
            "policy": {"network": "none", "user": "10001:10001", "runtime": "runc", "read_only_root": False,
                       "limits": {"memory": 2**30, "cpus": 1.0, "timeout": 60.0}}}


@pytest.mark.parametrize(("field", "craft"), CRAFTED, ids=[f"{f}-{i}" for i, (f, _) in enumerate(CRAFTED)])
def test_a_record_asking_for_more_is_refused_naming_the_field(field, craft):
    task = load_task(TASK)
    record = _record()
    assert run_options(record, task)["network"] is None  # the honest record passes
    craft(record)
    with pytest.raises(RecordRefused) as caught:
        run_options(record, task)
    assert field in str(caught.value) and "--trust-record" in str(caught.value) and "\n" not in str(caught.value)
    trusted = run_options(record, task, trust=True)  # honoured as recorded
    assert trusted is not None


def test_mounts_network_and_user_come_from_the_task_not_the_record():
    record = _record()
    record["policy"]["user"] = "image default"
    options = run_options(record, load_task(TASK))
    assert (options["user"], options["network"], options["input_run"]) == ("me", None, None)
    assert options["input_dir"] == (load_task(TASK).sample_dir / "input").resolve()


@pytest.mark.docker
def test_a_crafted_record_is_refused_and_accepted_with_trust_record(docker_client, tiny_image, tmp_path, capsys):
    from sharedtask.sandbox import run as sandbox_run

    first = sandbox_run(TASK, tiny_image, command=COMMAND, output_dir=tmp_path / "a" / "output")
    assert first.ok
    record = json.loads(first.record_path.read_text())
    assert main(["reproduce", str(first.record_path), "--output", str(tmp_path / "b" / "output"), "--json"]) == 0
    capsys.readouterr()

    crafted_run = tmp_path / "crafted-run"  # stands for the host's /: a folder the record names
    crafted_run.mkdir()
    (crafted_run / "host-secret").write_text("x")
    record["dataset"]["input_run"] = str(crafted_run)
    record["policy"]["network"] = "none"
    first.record_path.write_text(json.dumps(record))
    target = tmp_path / "c" / "output"
    assert main(["reproduce", str(first.record_path), "--output", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert "dataset.input_run" in err and "--trust-record" in err and "Traceback" not in err
    assert len(err.splitlines()) <= 2  # one line (rich may wrap a long one at the terminal's width)
    assert not target.exists()  # nothing ran

    for crafted, field in ((("policy", "network"), "host"), (("policy", "user"), "0:0")):
        bad = json.loads(json.dumps(record))
        bad[crafted[0]][crafted[1]] = field
        bad["dataset"]["input_run"] = None
        first.record_path.write_text(json.dumps(bad))
        assert main(["reproduce", str(first.record_path), "--output", str(target)]) == 2
        assert ".".join(crafted) in capsys.readouterr().err
        assert not target.exists()

    first.record_path.write_text(json.dumps(record))
    assert main(["reproduce", str(first.record_path), "--output", str(target), "--trust-record", "--json"]) == 0
    capsys.readouterr()
    assert (target / "seen.txt").read_text().split() == ["host-secret"]  # the recorded input run was mounted
    again = json.loads((target.parent / "run-record.json").read_text())
    assert again["dataset"]["input_run"] == str(crafted_run.resolve())


@pytest.mark.docker
def test_a_rerankers_record_finds_its_first_stage_by_itself_while_it_is_unchanged(docker_client, tiny_image,
                                                                                 tmp_path, capsys):
    """`reproduce RECORD` of a re-ranker mounts the stage folder the record names when it holds the
    recorded candidates (their sha256); a changed, moved or padded stage is refused, naming the
    stage and --input-run, and the first stage's run given with --input-run makes the same stage."""
    import shutil

    from sharedtask.sandbox import run as sandbox_run

    from service_helpers import perfect_run

    first_stage = tmp_path / "bm25.txt"  # fewer documents a topic than the depth: every one is a candidate
    first_stage.write_text(perfect_run("bm25"))
    keep = "cp $inputRun/run.txt $outputDir/run.txt"  # a re-ranker that keeps the first stage's order
    first = sandbox_run(TASK, tiny_image, command=keep, input_run=first_stage, output_dir=tmp_path / "a" / "output")
    assert first.ok, (first.result.status, first.result.message, first.validation)
    record = json.loads(first.record_path.read_text())
    stage = Path(record["dataset"]["input_run"])
    assert sorted(p.name for p in stage.iterdir()) == ["rerank.jsonl.gz", "run.txt"]
    digest = record["rerank"]["sha256"]

    again = tmp_path / "b" / "output"
    assert main(["reproduce", str(first.record_path), "--output", str(again), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "identical"
    rerun = json.loads((again.parent / "run-record.json").read_text())
    assert rerun["dataset"]["input_run"] == str(stage) and rerun["rerank"]["sha256"] == digest
    # the re-run's $inputDataset is the re-rank dataset made again beside its record, not the corpus
    mounted = {m["bind"]: host for host, m in rerun["container"]["mounts"].items()}
    assert mounted["/tira-data/input"] == rerun["rerank"]["dataset"] == str((again.parent / "rerank-dataset").resolve())
    assert rerun["dataset"]["input_dir"] == record["dataset"]["input_dir"]  # the dataset the run is of

    # a record made before the re-rank dataset (its rerank has no "dataset") read the task's dataset
    # at $inputDataset: its image is re-run with that mount, as it ran
    legacy = json.loads(first.record_path.read_text())
    del legacy["rerank"]["dataset"]
    legacy_path = tmp_path / "legacy" / "run-record.json"
    legacy_path.parent.mkdir()
    legacy_path.write_text(json.dumps(legacy))
    shutil.copytree(first.record_path.parent / "output", legacy_path.parent / "output")
    old_way = tmp_path / "legacy-rerun" / "output"
    assert main(["reproduce", str(legacy_path), "--output", str(old_way), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "identical"
    rerun = json.loads((old_way.parent / "run-record.json").read_text())
    mounted = {m["bind"]: host for host, m in rerun["container"]["mounts"].items()}
    assert mounted["/tira-data/input"] == str(Path(record["dataset"]["input_dir"]).resolve())
    assert "dataset" not in rerun["rerank"] and not (old_way.parent / "rerank-dataset").exists()

    def refused(target: str) -> str:
        assert main(["reproduce", str(first.record_path), "--output", str(tmp_path / target / "output")]) == 2
        assert not (tmp_path / target).exists()  # nothing ran
        err = capsys.readouterr().err
        assert "--input-run" in err and "Traceback" not in err
        return " ".join(err.split())

    (stage / "extra").write_text("x")  # a folder that is more than a stage is not mounted
    assert "is not a stage folder" in refused("c")
    (stage / "extra").unlink()
    original = (stage / "rerank.jsonl.gz").read_bytes()
    (stage / "rerank.jsonl.gz").write_bytes(original[:-8] + bytes(8))
    assert "has changed since the run" in refused("d")
    shutil.rmtree(stage)
    assert f"sha256 {digest[:16]}" in refused("e") and "is not at" in refused("f")

    given = tmp_path / "g" / "output"  # the first stage's run: the stage is made again, the same bytes
    assert main(["reproduce", str(first.record_path), "--input-run", str(first_stage), "--output", str(given),
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "identical"
    assert json.loads((given.parent / "run-record.json").read_text())["rerank"]["sha256"] == digest
