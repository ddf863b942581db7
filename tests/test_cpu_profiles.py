"""CPU profiles, worker event lines, worker scratch folders and landed records (no Docker).

The containers' side of the profiles (numpy and the JVM really hiding AVX-512) is tested in
tests/test_baselines_docker.py; here the pure parts, on files written by the tests."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sharedtask.errors import SharedTaskError
from sharedtask.executor import events
from sharedtask.executor.base import JobResult, relocated_record
from sharedtask.executor.scratch import OWNER_FILE, new_scratch, remove_stale
from sharedtask.sandbox import cpu
from sharedtask.sandbox.orphans import owner

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Test CPU @ 2.0GHz
flags\t\t: fpu sse4_2 avx fma avx2 avx512f avx512bw avx512vl ssse3

processor\t: 1
model name\t: Another CPU
flags\t\t: fpu
"""


def test_host_cpu_reads_the_first_processor_and_keeps_only_simd_flags(tmp_path: Path) -> None:
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    model, flags = cpu.host_cpu.__wrapped__(path)
    assert model == "Test CPU @ 2.0GHz"
    assert flags == ("sse4_2", "avx", "fma", "avx2", "avx512f", "avx512bw", "avx512vl")


def test_profiles_name_their_environment_and_what_they_hide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(cpu.PROFILE_ENV, raising=False)
    assert cpu.profile().name == "native" and cpu.profile().env() == {}
    haswell = cpu.profile("haswell").env()
    assert haswell["OPENBLAS_CORETYPE"] == "Haswell" and haswell["JAVA_TOOL_OPTIONS"] == "-XX:UseAVX=2"
    assert {"X86_V4", "AVX512F"} <= set(haswell["NPY_DISABLE_CPU_FEATURES"].split())
    assert "X86_V3" not in haswell["NPY_DISABLE_CPU_FEATURES"].split()
    nehalem = cpu.profile("nehalem")
    assert {"X86_V3", "AVX2", "X86_V4"} <= set(nehalem.env()["NPY_DISABLE_CPU_FEATURES"].split())
    assert "avx2" in nehalem.hides and "sse4_2" not in nehalem.hides
    monkeypatch.setenv(cpu.PROFILE_ENV, "haswell")
    assert cpu.profile().name == "haswell"
    monkeypatch.setenv(cpu.PROFILE_ENV, "pentium")
    with pytest.raises(SharedTaskError, match=r"unknown CPU profile 'pentium' \(from \$SHAREDTASK_CPU_PROFILE\)"):
        cpu.profile()
    with pytest.raises(SharedTaskError, match="choose one of native, haswell, nehalem"):
        cpu.profile("avx512")


def test_describe_and_difference_say_what_the_image_saw(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "host_cpu", lambda: ("Big CPU", ("sse4_2", "avx", "avx2", "avx512f")))
    native, haswell = cpu.describe(cpu.profile("native")), cpu.describe(cpu.profile("haswell"))
    assert native["seen_by_image"] == ["sse4_2", "avx", "avx2", "avx512f"] and native["hidden"] == []
    assert haswell["seen_by_image"] == ["sse4_2", "avx", "avx2"] and haswell["hidden"] == ["avx512f"]
    assert cpu.difference(native, dict(native)) is None
    note = cpu.difference(native, haswell)
    assert note is not None and "only the original's image saw avx512f" in note and "profile haswell" in note
    assert cpu.difference(None, haswell) is None  # a record from before profiles: nothing to say


def test_policy_records_its_profile() -> None:
    from sharedtask.sandbox.policy import Limits, Policy

    limits = Limits(memory=2**30, cpus=1.0, timeout=60.0, pids=64, max_output=2**20)
    assert Policy(limits=limits).to_json()["cpu_profile"] == "native"
    assert Policy(limits=limits, cpu="nehalem").to_json()["cpu_profile"] == "nehalem"


def test_event_lines_are_one_per_event_and_parse_back() -> None:
    stream = io.StringIO()
    events.configure(stream)
    long_path = "/tmp/" + "x" * 300 + "/scratch dir"
    events.emit("worker-started", worker="w1", scratch=long_path, concurrency=2, note='a "quoted" = value')
    events.emit("orphans-removed", worker="w1", count=1, containers="abc")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2  # never wrapped, however long a value is
    first = events.parse(lines[0])
    assert first is not None and first["event"] == "worker-started"
    assert first["scratch"] == long_path and first["concurrency"] == "2" and first["note"] == 'a "quoted" = value'
    assert events.events(stream.getvalue(), "orphans-removed")[0]["count"] == "1"
    assert events.parse("[2026-11-25 12:00:00,000: INFO/MainProcess] celery@w1 ready.") is None


def test_worker_log_lines_are_not_wrapped_when_the_output_is_a_file(tmp_path: Path) -> None:
    # rich wraps at 80 columns when stderr is not a terminal; the worker's console must not
    code = ("from sharedtask.cli.worker import console; "
            "console.print('sharedtask worker w: scratch ' + '/very/long/path' * 20 + '; removed 1 container(s)')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "COLUMNS": "", "TERM": "dumb"})
    assert len(done.stderr.strip().splitlines()) == 1


def test_stale_scratch_folders_of_dead_owners_are_removed_and_live_ones_kept(tmp_path: Path) -> None:
    mine = new_scratch(tmp_path, "job-1")
    (mine / "run" / "output").mkdir(parents=True)
    assert (mine / OWNER_FILE).read_text().strip() == owner()
    dead = tmp_path / "job-2-deadbeef"
    (dead / "run" / "output").mkdir(parents=True)
    (dead / "run" / "output" / "run.txt").write_text("x")
    gone = subprocess.run([sys.executable, "-c", "from sharedtask.sandbox.orphans import owner; print(owner())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # a process that has ended
    (dead / OWNER_FILE).write_text(gone + "\n")
    elsewhere = tmp_path / "job-3-cafecafe"
    elsewhere.mkdir()
    (elsewhere / OWNER_FILE).write_text("another-host/123/456\n")
    unmarked = tmp_path / "notes"
    unmarked.mkdir()
    assert remove_stale(tmp_path) == [dead]
    assert mine.is_dir() and elsewhere.is_dir() and unmarked.is_dir() and not dead.exists()
    assert remove_stale(tmp_path / "missing") == []


def test_a_landed_record_names_the_coordinators_folder(tmp_path: Path) -> None:
    worker_run = "/home/w/.cache/sharedtask/worker/job-1-abcd/run"
    record = {
        "output": {"dir": f"{worker_run}/output", "bytes": 3},
        "logs": {"stdout": f"{worker_run}/stdout.log", "stderr": f"{worker_run}/stderr.log"},
        "validation": {"run_file": f"{worker_run}/output/run.txt"},
        "dataset": {"input_dir": "/data/touche/input"},
        "reproduce": f"docker run -v {worker_run}/output:/tira-data/output:rw img",
        "container": {"mounts": {f"{worker_run}/output": {"bind": "/tira-data/output"}}},
        "executor": {"job_id": "job-1", "worker": "w1"},
    }
    landed = tmp_path / "results" / "t" / "bm25"
    moved = relocated_record(record, landed)
    new = str(landed.resolve())
    assert moved["output"]["dir"] == f"{new}/output" and moved["logs"]["stderr"] == f"{new}/stderr.log"
    assert moved["validation"]["run_file"] == f"{new}/output/run.txt"
    assert moved["reproduce"] == f"docker run -v {new}/output:/tira-data/output:rw img"
    assert list(moved["container"]["mounts"]) == [f"{new}/output"]
    assert moved["dataset"]["input_dir"] == "/data/touche/input"  # not the scratch folder: kept
    assert moved["executor"] == {"job_id": "job-1", "worker": "w1", "worker_run_dir": worker_run}
    result = JobResult("job-1", "done", "success", "", "w1", {"run_file": "run.txt"}, record)
    assert result.relocated(landed).record["output"]["dir"] == f"{new}/output"
    assert relocated_record({}, landed) == {}
