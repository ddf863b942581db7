"""Reproduction with real containers: every baseline re-run on its sample reproduces its stored
reference run byte for byte; a run with changed BM25 parameters gives the KTU, RBO and RMSE that
the test computes independently (the definitions written out here, and repro_eval's own code)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sharedtask.cli import main
from sharedtask.evaluate.api import evaluate
from sharedtask.evaluate.compare import compare
from sharedtask.formats.trec import load_run_dict
from sharedtask.manifest import load_manifest
from sharedtask.report import render_html
from sharedtask.reproduce import default_reference_root, report_sections, reproduce_baselines
from sharedtask.sandbox.api import run as sandbox_run
from sharedtask.spec import load_task

pytestmark = [pytest.mark.docker, pytest.mark.slow]

TASK = "touche-2021-task1"
LUCENE = "sharedtask/baseline-lucene:latest"


@pytest.mark.parametrize("cpu", ["native", "haswell"])
def test_every_baseline_reproduces_its_reference_identically(base_image: str, tmp_path: Path, cpu: str) -> None:
    """Byte for byte under the machine's own CPU and under an older one emulated (no AVX-512
    for numpy, OpenBLAS and the JVM): the references hold on every x86-64 CPU."""
    manifest = load_manifest()
    reps = reproduce_baselines(manifest, tmp_path, lambda _: None, cpu=cpu)
    served = {(t, sw.name) for sw in manifest.baselines for t in
              [p.parent.name for p in default_reference_root().glob(f"*/{sw.name}.txt")]}
    assert {(r.task.id, r.name) for r in reps} == served and len(reps) == len(served) >= 17
    for rep in reps:
        assert rep.error is None, f"{rep.task.id}/{rep.name}: {rep.error}"
        assert rep.comparison is not None and rep.comparison.verdict == "identical", (
            f"{rep.task.id}/{rep.name}: {rep.comparison.verdict_line()} ({rep.cpu_note})")
        seen = rep.sandbox.record["cpu"]
        assert seen["profile"] == cpu
        if cpu == "haswell":  # the container was told, and the record says what it hid
            assert rep.sandbox.record["container"]["environment"]["OPENBLAS_CORETYPE"] == "Haswell"
            assert not [f for f in seen["seen_by_image"] if f.startswith("avx512")]
    page = render_html(report_sections(reps))
    assert page.count("<h3>Reproduction</h3>") == len({r.task.id for r in reps}) >= 9
    assert page.count('data-verdict="identical"') == len(served)


def test_reproduce_all_cli_for_one_task(base_image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.html"
    code = main(["reproduce", "--all", "--task", TASK, "--output", str(tmp_path / "runs"), "--report", str(report),
                 "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    serving = sorted(sw.name for sw in load_manifest().baselines if sw.serves(TASK))
    assert {"lucene-bm25", "lucene-dirichlet"} <= set(serving)
    assert sorted((d["baseline"], d["verdict"]) for d in data) == [(name, "identical") for name in serving]
    assert "<h3>Reproduction</h3>" in report.read_text(encoding="utf-8")
    # a reference that no longer matches: exit 1, and the verdict names what differs
    refs = tmp_path / "refs" / TASK
    refs.mkdir(parents=True)
    for name in ("lucene-bm25", "lucene-dirichlet"):
        (refs / f"{name}.txt").write_bytes((default_reference_root() / TASK / f"{name}.txt").read_bytes())
    (refs / "lucene-bm25.txt").write_bytes((default_reference_root() / TASK / "lucene-dirichlet.txt").read_bytes())
    code = main(["reproduce", "--all", "--task", TASK, "--output", str(tmp_path / "runs2"),
                 "--references", str(tmp_path / "refs")])
    out = capsys.readouterr().out
    assert code == 1 and "differs" in out and "lucene-bm25" in out


def _trec_order(docs: dict[str, float]) -> list[str]:
    """trec_eval's order: score descending, docno descending (the sample's scores have no float32 ties)."""
    return [d for d, _ in sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)]


def _rbo_by_definition(a: list[str], b: list[str], p: float) -> float:
    """sum_d p^(d-1) |A[:d] & B[:d]| / d over d = 1..k, divided by sum_d p^(d-1) (no incremental sets)."""
    k = max(len(a), len(b))
    weights = [p**d for d in range(k)]
    overlap = [len(set(a[:d + 1]) & set(b[:d + 1])) / (d + 1) for d in range(k)]
    return sum(w * o for w, o in zip(weights, overlap)) / sum(weights)


def test_changed_bm25_parameters_measured(base_image: str, tmp_path: Path) -> None:
    document_order = pytest.importorskip("repro_eval.measure.document_order")
    task = load_task(TASK)
    reference = default_reference_root() / TASK / "lucene-bm25.txt"
    outcome = sandbox_run(task, LUCENE, command="python -m lucene_baseline --model bm25 --k1 1.2 --b 0.75",
                          output_dir=tmp_path / "out")
    assert outcome.ok
    perturbed = Path(outcome.validation["run_file"])
    truth = task.sample_dir / "truth"
    result = compare(reference, perturbed, task, truth_dir=truth)
    assert not result.identical and result.verdict == "differs"

    orig, rep = load_run_dict(reference, "trec"), load_run_dict(perturbed, "trec")
    assert set(orig) == set(rep) == set(result.rbo)
    for topic in orig:
        a, b = _trec_order(orig[topic]), _trec_order(rep[topic])
        assert result.rbo[topic] == pytest.approx(_rbo_by_definition(a, b, 0.95), abs=1e-12)
        n = min(len(a), len(b))  # repro_eval's KTU needs rankings of one length
        expected_ktu = document_order.KTU({topic: {d: float(n - i) for i, d in enumerate(a[:n])}},
                                          {topic: {d: float(n - i) for i, d in enumerate(b[:n])}}, per_topic=True)
        assert result.ktu[topic] == pytest.approx(expected_ktu[topic], abs=1e-12)
    assert result.mean_ktu < 1 and result.mean_rbo < 1
    # RMSE of the official nDCG@5 over the per-topic values of each run (evaluated separately)
    ev_orig = evaluate(reference, task, truth_dir=truth, per_topic=True).per_topic["ndcg5_official"]
    ev_rep = evaluate(perturbed, task, truth_dir=truth, per_topic=True).per_topic["ndcg5_official"]
    topics = set(ev_orig) | set(ev_rep)
    expected_rmse = math.sqrt(sum((ev_orig.get(t, 0) - ev_rep.get(t, 0)) ** 2 for t in topics) / len(topics))
    (ndcg,) = [m for m in result.measures if m.info.key == "ndcg5_official"]
    assert ndcg.rmse == pytest.approx(expected_rmse) and ndcg.rmse > 0


def test_reproduce_a_recorded_run(base_image: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = sandbox_run(TASK, LUCENE, command="python -m lucene_baseline --model bm25", output_dir=tmp_path / "a" / "output")
    assert first.ok
    code = main(["reproduce", str(first.record_path), "--output", str(tmp_path / "b" / "output"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["verdict"] == "identical"
    assert Path(data["record"]).is_file()
    assert (tmp_path / "b" / "output" / "run.txt").read_bytes() == (tmp_path / "a" / "output" / "run.txt").read_bytes()
