"""Unit tests of the sandbox's pure parts: limits parsing, policy → docker options, contract, statuses."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from sharedtask.errors import SharedTaskError
from sharedtask.sandbox.api import dataset_id_of, image_slug, new_run_dir
from sharedtask.sandbox.policy import (
    Limits,
    Policy,
    format_size,
    parse_duration,
    parse_size,
    parse_user,
)
from sharedtask.sandbox.outputs import Usage, check_run_file, output_usage, remove_tree
from sharedtask.sandbox.runner import _classify, contract_environment, substitute

GiB = 1024**3
MiB = 1024**2


@pytest.mark.parametrize(
    ("text", "expected"),
    [("2g", 2 * GiB), ("512m", 512 * MiB), ("1.5GiB", GiB + GiB // 2), ("100k", 102400),
     ("4G", 4 * GiB), (" 10 g ", 10 * GiB), ("2gb", 2 * GiB), (1000, 1000), ("1000", 1000)],
)
def test_parse_size_uses_docker_binary_units(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("bad", ["", "g", "-1g", "2x", "0", "1.2.3m", True])
def test_parse_size_rejects_nonsense(bad):
    with pytest.raises(SharedTaskError):
        parse_size(bad)


def test_format_size_reads_like_the_oom_message():
    assert format_size(2 * GiB) == "2 GiB"
    assert format_size(128 * MiB) == "128 MiB"
    assert format_size(1536) == "1.5 KiB"
    assert format_size(17) == "17 B"
    assert format_size(None) == "unknown"


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), (90, 90), ("90s", 90), ("15m", 900), ("2h", 7200),
                                               ("0.5", 0.5)])
def test_parse_duration(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["0", "-3", "1d", "soon"])
def test_parse_duration_rejects(bad):
    with pytest.raises(SharedTaskError):
        parse_duration(bad)


def test_parse_user():
    # A root organizer's containers get a fixed unprivileged uid, anyone else's their own.
    assert parse_user("me") == ("10001:10001" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}")
    assert parse_user("image") is None
    assert parse_user(None) is None
    assert parse_user("1234") == "1234"
    assert parse_user("1234:99") == "1234:99"
    with pytest.raises(SharedTaskError):
        parse_user("alice")


def test_limits_from_spec_and_overrides():
    spec = SimpleNamespace(memory="10g", cpus=2, timeout=7200, pids=1024, max_output="1g", max_output_entries=500, disk="3g")
    limits = Limits.from_spec(spec)
    assert limits == Limits(memory=10 * GiB, cpus=2.0, timeout=7200.0, pids=1024, max_output=GiB,
                            max_output_entries=500, disk=3 * GiB)
    changed = limits.with_overrides(memory="512m", timeout="90s", cpus=0.5, disk="100m")
    assert (changed.memory, changed.timeout, changed.cpus, changed.pids, changed.disk) == (
        512 * MiB, 90.0, 0.5, 1024, 100 * MiB)
    with pytest.raises(SharedTaskError):
        limits.with_overrides(cpus=0)


def test_limits_of_every_shipped_task_parse():
    from sharedtask.spec import all_tasks

    for task in all_tasks():
        limits = Limits.from_spec(task.sandbox)
        assert limits.memory > 0 and limits.timeout > 0 and limits.max_output > 0, task.id


def _policy(**kw) -> Policy:
    return Policy(limits=Limits(memory=2 * GiB, cpus=1.5, timeout=60, pids=64, max_output=GiB), **kw)


def test_default_policy_is_the_documented_sandbox():
    opts = _policy().container_options()
    assert opts["network_mode"] == "none"
    assert "network" not in opts
    assert opts["cap_drop"] == ["ALL"]
    assert opts["security_opt"] == ["no-new-privileges"]
    assert opts["pids_limit"] == 64
    assert opts["mem_limit"] == opts["memswap_limit"] == 2 * GiB  # no swap
    assert opts["nano_cpus"] == 1_500_000_000
    assert opts["read_only"] is False
    assert "/tmp" in opts["tmpfs"] and "exec" in opts["tmpfs"]["/tmp"].split(",")
    # a resolvable host name without any network (log4j UnknownHostException)
    assert opts["extra_hosts"] == {opts["hostname"]: "127.0.0.1"}
    assert "user" not in opts


def test_policy_with_network_and_user():
    opts = _policy(network="my-net", user="1000:1000", read_only_root=True).container_options()
    assert opts["network"] == "my-net" and "network_mode" not in opts and "extra_hosts" not in opts
    assert opts["user"] == "1000:1000"
    assert opts["read_only"] is True


def test_substitution_matches_tira_normalisation():
    cmd = "run.sh $inputDataset ${outputDir}/x $inputRun $inputDatasetX"
    assert substitute(cmd, has_input_run=True) == (
        "run.sh /tira-data/input /tira-data/output/x /tira-data/input-run /tira-data/inputX"
    )
    # without an input run, $inputRun stays for the shell (it is unset there, as in TIRA)
    assert substitute("a $inputRun", has_input_run=False) == "a $inputRun"


def test_contract_environment():
    env = contract_environment("touche-2020", has_input_run=False)
    assert env == {
        "inputDataset": "/tira-data/input",
        "outputDir": "/tira-data/output",
        "TIRA_INPUT_DATASET": "/tira-data/input",
        "TIRA_OUTPUT_DIR": "/tira-data/output",
        "TIRA_DATASET_ID": "touche-2020",
    }
    assert contract_environment("x", has_input_run=True)["inputRun"] == "/tira-data/input-run"


@pytest.mark.parametrize(
    ("exit_code", "oom", "out", "status", "words"),
    [
        (0, False, 10, "success", "exited with code 0"),
        (3, False, 10, "failed", "exited with code 3"),
        (137, True, 10, "oom", "killed: out of memory at 2 GiB"),
        (137, False, 10, "failed", "SIGKILL"),
        (0, False, 2 * GiB, "output-limit", "more than the limit of 1 GiB"),
        (0, False, -1, "output-limit", "more than 100 files, directories and links"),
        (0, True, 10, "success", "ran out of memory"),
        (None, False, 0, "failed", "could not be read"),
    ],
)
def test_classification_in_plain_words(exit_code, oom, out, status, words):
    limits = Limits(memory=2 * GiB, cpus=1, timeout=10, pids=64, max_output=GiB, max_output_entries=100)
    usage = Usage(bytes=0, entries=101) if out == -1 else Usage(bytes=out, entries=1)
    got_status, message = _classify(exit_code, oom, usage, limits)
    assert got_status == status
    assert words in message


def test_output_usage_counts_apparent_size_entries_and_stops_at_a_bound(tmp_path: Path):
    (tmp_path / "a").write_bytes(b"x" * 1000)
    (tmp_path / "d" / "e").mkdir(parents=True)
    (tmp_path / "d" / "e" / "b").write_bytes(b"y" * 24)
    with (tmp_path / "sparse").open("wb") as fh:  # 10 MiB hole, almost no blocks
        fh.seek(10 * MiB - 1)
        fh.write(b"\0")
    (tmp_path / "link").symlink_to("/etc")  # counted as an entry, never followed
    usage = output_usage(tmp_path)
    assert (usage.bytes - len("/etc"), usage.entries, usage.truncated) == (1000 + 24 + 10 * MiB, 6, False)
    assert output_usage(tmp_path, max_bytes=500).truncated
    assert output_usage(tmp_path, max_entries=2).entries == 3
    # On disk the sparse file takes a block or so, and every entry is charged entry_cost.
    assert output_usage(tmp_path, allocated=True, entry_cost=4096).bytes < 1 * MiB


def test_deep_trees_are_walked_and_removed_without_recursion(tmp_path: Path):
    root = tmp_path / "out"
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    for _ in range(1500):  # deeper than Python's recursion limit, built the way a container would
        os.mkdir("d", dir_fd=fd)
        fd, old = os.open("d", os.O_RDONLY, dir_fd=fd), fd
        os.close(old)
    os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    usage = output_usage(root)
    assert usage.truncated and usage.depth == 256  # counted down to the bound, no RecursionError
    (root / "d").chmod(0o500)  # a container may leave directories read-only
    remove_tree(root)
    assert not root.exists()


def test_run_file_check_never_follows_or_opens_what_the_container_left(tmp_path: Path):
    secret = tmp_path / "secret"
    secret.write_text("1 Q0 stolen 1 1.0 x\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / "run.txt").symlink_to(secret)
    assert check_run_file(out, "run.txt", GiB).code == "RUN-OUTPUT-LINK"
    (out / "run.txt").unlink()
    os.mkfifo(out / "run.txt")  # opening it would block the host forever
    assert check_run_file(out, "run.txt", GiB).code == "RUN-OUTPUT-SPECIAL"
    (out / "run.txt").unlink()
    with (out / "run.txt").open("wb") as fh:  # sparse: 100 GiB of nothing
        fh.truncate(100 * GiB)
    check = check_run_file(out, "run.txt", GiB)
    assert check.code == "RUN-TOO-LARGE" and "100 GiB" in check.reason
    (out / "run.txt").write_text("1 Q0 d 1 1.0 x\n")
    assert check_run_file(out, "run.txt", GiB).path == out / "run.txt"
    (out / "run.txt.gz").write_bytes(b"")
    assert check_run_file(out, "run.txt", GiB).code == "RUN-MISSING"  # both: TIRA refuses


def test_run_dir_naming(tmp_path: Path):
    assert image_slug("ghcr.io/team/ranker:1.0") == "ghcr.io-team-ranker-1.0"
    first = new_run_dir("touche-2020-task1", "a/b:1", tmp_path)
    second = new_run_dir("touche-2020-task1", "a/b:1", tmp_path)
    assert first != second and first.is_dir() and second.is_dir()
    assert first.parent == tmp_path / "touche-2020-task1"
    assert dataset_id_of(tmp_path / "touche-2020" / "input") == "touche-2020"
    assert dataset_id_of(tmp_path / "my-data") == "my-data"


def test_progress_bars_count_bytes_in_the_same_units():
    """Done/total and speed of a byte progress bar read in binary units, as every other size
    (issue 40: rich's defaults printed "12.3 MB" and "kB/s" beside limits in MiB)."""
    import io

    from rich.console import Console
    from rich.progress import Progress

    from sharedtask.data.progress import byte_columns

    out = io.StringIO()
    console = Console(file=out, width=200, force_terminal=True, color_system=None)
    with Progress(*byte_columns(), console=console, auto_refresh=False) as bar:
        task = bar.add_task("x", total=3 * MiB)
        bar.advance(task, 1536 * 1024)
        bar.refresh()
    text = out.getvalue()
    assert "1.5/3.0 MiB" in text, text
    assert "kB" not in text and " MB" not in text, text
