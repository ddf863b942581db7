"""Agreement figures against hand computation, scikit-learn's kappa and a Krippendorff's
alpha written here from its definition (coincidence matrix, ordinal metric)."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest
from sklearn.metrics import cohen_kappa_score

from sharedtask.edition.agreement import agreement, cohen_kappa, confusion, krippendorff_alpha, read_grades
from sharedtask.errors import FormatError


def test_kappa_by_hand() -> None:
    a = [0, 1, 2, 3, 2, 0]
    b = [0, 1, 3, 3, 1, 0]
    # po = 4/6; pe = (2*2 + 1*2 + 2*0 + 1*2) / 36 = 8/36; kappa = (4/6 - 8/36) / (1 - 8/36) = 4/7
    assert cohen_kappa(a, b) == pytest.approx(4 / 7)
    # H+M (>= 2): a = 001110, b = 001100; po = 5/6, pe = (3*2 + 3*4)/36 = 1/2; kappa = 2/3
    grades_a = {("A.1", str(i)): g for i, g in enumerate(a)}
    grades_b = {("A.1", str(i)): g for i, g in enumerate(b)}
    result = agreement({"ann": grades_a, "bob": grades_b}, relevant_from=2)
    assert result.judged_by_both == 6
    assert result.cohen_kappa == pytest.approx(4 / 7)
    assert result.cohen_kappa_binary == pytest.approx(2 / 3)
    assert result.pairs[0].confusion == [[2, 0, 0, 0], [0, 1, 0, 0], [0, 1, 0, 1], [0, 0, 0, 1]]
    assert result.pairs[0].confusion_binary == [[3, 0], [1, 2]]
    assert result.krippendorff_alpha is None  # two assessors: kappa only


def test_kappa_only_on_items_both_judged_and_undefined_case() -> None:
    a = {("1", "x"): 1, ("1", "y"): 0, ("2", "z"): 3}
    b = {("1", "x"): 1, ("1", "y"): 0, ("3", "w"): 0}
    result = agreement({"a": a, "b": b}, relevant_from=1)
    assert result.judged_by_both == 2
    assert result.cohen_kappa == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([2, 2], [2, 2]))  # chance agreement 1: undefined
    assert result.as_json()["cohen_kappa"] == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_kappa_equals_sklearn(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.randrange(4) for _ in range(200)]
    b = [x if rng.random() < 0.6 else rng.randrange(4) for x in a]
    assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b))
    ba = [int(x >= 2) for x in a]
    bb = [int(x >= 2) for x in b]
    assert cohen_kappa(ba, bb) == pytest.approx(cohen_kappa_score(ba, bb))
    from sklearn.metrics import confusion_matrix

    assert confusion(a, b, [0, 1, 2, 3]) == confusion_matrix(a, b, labels=[0, 1, 2, 3]).tolist()


def naive_ordinal_alpha(units: list[list[int]]) -> float:
    """Krippendorff's alpha, ordinal metric, from the definition (Krippendorff 2011,
    "Computing Krippendorff's Alpha-Reliability", §C and §E)."""
    values = sorted({v for u in units for v in u})
    o = {(c, k): 0.0 for c in values for k in values}
    for u in units:
        m = len(u)
        if m < 2:
            continue
        for i in range(m):
            for j in range(m):
                if i != j:
                    o[(u[i], u[j])] += 1 / (m - 1)
    n_c = {c: sum(o[(c, k)] for k in values) for c in values}
    n = sum(n_c.values())

    def delta2(c: int, k: int) -> float:
        lo, hi = min(c, k), max(c, k)
        between = sum(n_c[g] for g in values if lo <= g <= hi)
        return (between - (n_c[c] + n_c[k]) / 2) ** 2

    d_o = sum(o[(c, k)] * delta2(c, k) for c in values for k in values)
    d_e = sum(n_c[c] * n_c[k] * delta2(c, k) for c in values for k in values)
    return 1 - (n - 1) * d_o / d_e


@pytest.mark.parametrize("seed", range(4))
def test_alpha_equals_definition(seed: int) -> None:
    rng = random.Random(seed)
    people = {name: {} for name in ("a", "b", "c")}
    units: list[list[int]] = []
    for i in range(60):
        truth = rng.randrange(4)
        unit = []
        for grades in people.values():
            if rng.random() < 0.8:  # not everyone judged every item
                g = truth if rng.random() < 0.7 else rng.randrange(4)
                grades[("T", str(i))] = g
                unit.append(g)
        units.append(unit)
    result = agreement(people, relevant_from=2)
    assert result.krippendorff_alpha == pytest.approx(naive_ordinal_alpha(units))
    assert len(result.pairs) == 3
    assert result.cohen_kappa == pytest.approx(sum(p.cohen_kappa for p in result.pairs) / 3)
    assert krippendorff_alpha([{("T", "1"): 1, ("T", "2"): 2}] * 3) == pytest.approx(1.0)


def test_cli_json_and_errors(tmp_path: Path) -> None:
    a = tmp_path / "a.qrels"
    b = tmp_path / "b.qrels"
    a.write_text("".join(f"A.301\t0\t{i}\t{g}\n" for i, g in enumerate([0, 1, 2, 3, 2, 0])))
    b.write_text("".join(f"A.301\t0\t{i}\t{g}\n" for i, g in enumerate([0, 1, 3, 3, 1, 0])))
    cli = [sys.executable, "-m", "sharedtask"]
    done = subprocess.run([*cli, "agreement", str(a), str(b), "--task", "arqmath-3-task1", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["judged_by_both"] == 6
    assert out["cohen_kappa"] == pytest.approx(4 / 7, abs=1e-6)
    assert out["cohen_kappa_binary"] == pytest.approx(2 / 3, abs=1e-6)
    assert out["confusion"]["matrix"][2] == [0, 1, 0, 1]
    c = tmp_path / "c.qrels"
    c.write_text("A.301\t0\t0\t0\nA.301\t0\t1\t1\nA.301\t0\t2\t2\n")
    done = subprocess.run([*cli, "agreement", str(a), str(b), str(c), "--task", "arqmath-3-task1", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert "krippendorff_alpha" in out and out["assessors"] == ["a", "b", "c"]
    done = subprocess.run([*cli, "agreement", f"ann={a}", f"bob={b}", "--task", "arqmath-3-task1", "--json"],
                          capture_output=True, text=True, timeout=120)
    assert json.loads(done.stdout)["assessors"] == ["ann", "bob"]
    bad = tmp_path / "bad.qrels"
    bad.write_text("A.301 0 1 2\nA.301 0 1 x\n")
    done = subprocess.run([*cli, "agreement", str(a), str(bad), "--task", "arqmath-3-task1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"{bad}:2:" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    twice = tmp_path / "twice.qrels"
    twice.write_text("A.301 0 1 2\nA.301 0 1 3\n")
    with pytest.raises(FormatError, match="judged twice"):
        read_grades(twice)
