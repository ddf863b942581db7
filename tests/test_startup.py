"""Start-up: commands import only what they use, and the fast paths give the same results.

The module checks run the real CLI in a child process and read ``sys.modules`` at its
end (no wall-clock bounds: which modules load is what decides the start-up time,
benchmarks/startup.py measures the time itself).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sharedtask.spec import load_task
from sharedtask.validate import ranking, validate

# Modules that cost tens of milliseconds each and that --help needs none of.
HEAVY = ("jsonschema", "numpy", "pytrec_eval", "docker", "scipy", "rich.console", "yaml",
         "sharedtask.formats.arqmath", "sharedtask.sandbox.runner", "sharedtask.manifest", "sharedtask.evaluate.api",
         "sympy", "mpmath")

_PROBE = """
import json, sys
from sharedtask.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
sys.stdout.flush()
print("\\n@@" + json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _probe(*argv: str) -> tuple[int, str, set[str]]:
    """(exit code, stdout before the probe's line, modules loaded) of one CLI call in a child process."""
    proc = subprocess.run([sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=True)
    out, _, tail = proc.stdout.rpartition("\n@@")
    data = json.loads(tail)
    return data["code"], out, set(data["modules"])


@pytest.mark.parametrize("argv", [["--help"], ["validate", "--help"], ["evaluate", "--help"], ["compare", "--help"],
                                  ["reproduce", "--help"], ["run", "--help"], ["baseline", "--help"]])
def test_help_loads_no_heavy_module(argv: list[str]) -> None:
    code, out, modules = _probe(*argv)
    assert code == 0
    assert "usage: sharedtask" in out
    assert sorted(m for m in HEAVY if m in modules) == []


def test_compare_help_still_shows_the_reproduction_defaults() -> None:
    from sharedtask.evaluate.reproduction import RBO_P, Thresholds

    _, out, _ = _probe("compare", "--help")
    flat = " ".join(out.split())
    assert f"(default {RBO_P}, repro_eval's)" in flat
    assert f"--min-ktu X (default {Thresholds().min_ktu})" in flat


def _write_run(path: Path, scores_by_topic: dict[str, list[str]]) -> None:
    lines = []
    for topic, scores in scores_by_topic.items():
        for rank, score in enumerate(scores, 1):
            lines.append(f"{topic} Q0 S{rank:08x}-A{int(topic):08x} {rank} {score} tag\n")
    path.write_text("".join(lines))


def test_validate_json_of_a_run_without_ties_loads_neither_numpy_nor_rich(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    _write_run(run, {str(t): [f"{10 - k * 0.5}" for k in range(10)] for t in (51, 52, 53)})
    code, out, modules = _probe("validate", str(run), "--task", "touche-2021-task1", "--json")
    assert code == 0, out
    assert json.loads(out)["valid"] is True
    assert "numpy" not in modules and "rich.console" not in modules and "jsonschema" not in modules


def test_a_tie_still_loads_numpy_and_is_reported(tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    _write_run(run, {str(t): ["3", "2", "2", "1", "0.5"] for t in (51, 52, 53)})
    code, out, modules = _probe("validate", str(run), "--task", "touche-2021-task1", "--json")
    assert "numpy" in modules
    codes = [f["code"] for f in json.loads(out)["findings"]]
    assert codes.count("RUN-TIE") == 3


# Scores near the edges of float32: subnormals, values that round together, beyond FLT_MAX (inf).
_edge = st.sampled_from([3.4028234663852886e38, 3.4028235677973366e38, 3.5e38, 1e300, 1.4e-45, 7e-46, 1e-46,
                         0.0, -0.0, 1.0, 1.00000001, 1.0000001, 16777216.0, 16777217.0])
_score = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.floats(width=32, allow_nan=False,
                   allow_infinity=False), _edge, _edge.map(lambda v: -v))


@settings(max_examples=400, deadline=None)
@given(st.lists(_score, max_size=12))
def test_the_tie_precheck_answers_as_numpy_float32(scores: list[float]) -> None:
    """The pure-Python precheck and the numpy path agree on every neighbour pair."""
    with np.errstate(over="ignore"):
        b = np.asarray(scores, dtype=np.float64).astype(np.float32)
    assert ranking._neighbours_distinct_f32(scores) == (not bool((b[1:] == b[:-1]).any()))


_plain = st.sampled_from(["10", "9.5", "9.5", "9.4999999", "9.49999999", "9", "8", "8.0", "1e39", "3.5e38",
                          "3.4e38", "0", "-0", "-1", "-1e39"])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_plain, min_size=1, max_size=6), min_size=1, max_size=4))
def test_validator_findings_are_the_same_with_and_without_the_precheck(tmp_path_factory, topics) -> None:
    """Differential: every generated run validates to the same findings whether the numpy
    path runs for every topic (precheck off) or only where the precheck finds a tie."""
    path = tmp_path_factory.mktemp("run") / "run.txt"
    _write_run(path, {str(51 + i): sorted(t, key=float, reverse=True) for i, t in enumerate(topics)})
    task = load_task("touche-2021-task1")
    fast = validate(path, task).to_json()
    original = ranking._neighbours_distinct_f32
    ranking._neighbours_distinct_f32 = lambda scores: False  # the numpy path everywhere, as before
    try:
        slow = validate(path, task).to_json()
    finally:
        ranking._neighbours_distinct_f32 = original
    assert fast == slow


def _yaml_files() -> list[Path]:
    from sharedtask.spec import tasks_dir

    return sorted(tasks_dir().rglob("*.yml"))


def test_every_shipped_yaml_file_reads_the_same_with_libyaml() -> None:
    """The spec reader's fast loader (libyaml) builds the documents the pure parser builds."""
    import yaml

    from sharedtask import spec

    files = _yaml_files()
    assert len(files) > 10
    assert spec._FAST_LOADER is yaml.CSafeLoader  # else this test compares the pure parser with itself
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert yaml.load(text, Loader=yaml.CSafeLoader) == yaml.safe_load(text), path  # noqa: S506


@pytest.mark.parametrize("text", ["id: [unclosed\n", "a: 1\n  b: 2\n", "a: 'x\n", "- a\nb: 1\n", "a: *nope\n",
                                  "a: 1\na: {b: [1, 2}\n", "\tid: x\n"])
def test_broken_yaml_names_the_same_place_as_the_pure_parser(tmp_path: Path, text: str) -> None:
    import yaml

    from sharedtask import spec
    from sharedtask.errors import SpecError

    path = tmp_path / "t.yml"
    path.write_text(text)
    with pytest.raises(yaml.MarkedYAMLError) as pure:
        yaml.safe_load(path.open())
    mark, context = pure.value.problem_mark, pure.value.context_mark
    with pytest.raises(SpecError) as ours:
        spec.read_yaml(path)
    where = f"{path}:{mark.line + 1}:{mark.column + 1}: invalid YAML: {pure.value.problem}"
    if pure.value.context and context and (context.line, context.column) != (mark.line, mark.column):
        # and where the unclosed scalar or collection began, as the pure parser's context says
        where += f" ({pure.value.context} at line {context.line + 1}, column {context.column + 1})"
    assert str(ours.value) == where
