"""``compare()``: an original run against its reproduction, with a verdict.

Identical bytes end the question. Otherwise the rankings are compared topic by topic
(KTU, RBO at the persistence ``p`` stated in the result), and with qrels each official
measure by RMSE and a paired t-test; with the runs of a baseline on both sides also the
effect ratio and ΔRI (:mod:`sharedtask.evaluate.reproduction`, docs/reproduction.md).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sharedtask.errors import SharedTaskError
from sharedtask.evaluate import reproduction as rm
from sharedtask.evaluate.api import evaluate
from sharedtask.evaluate.readers import check_run_layout
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo
from sharedtask.formats.layouts import RUN_LAYOUTS
from sharedtask.formats.trec import load_run_dict, read_run
from sharedtask.formats.runfile import find_run_file

IDENTICAL = "identical"
REPRODUCED = "reproduced"
DIFFERS = "differs"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass
class MeasureComparison:
    """One official measure: means, RMSE of the per-topic values, t-test, ER/ΔRI."""

    info: MeasureInfo
    original: float
    reproduced: float
    rmse: float
    p_value: float
    topics: int
    per_topic_difference: dict[str, float]  # reproduced - original, union of topics (missing = 0)
    effect_ratio: float | None = None
    delta_ri: float | None = None


@dataclass
class Comparison:
    task: str
    original: str
    reproduced: str
    identical: bool
    sha256: tuple[str, str]
    p: float
    depth: int
    ktu: dict[str, float | None]
    rbo: dict[str, float]
    measures: list[MeasureComparison]
    thresholds: rm.Thresholds
    baselines: tuple[str, str] | None = None
    verdict: str = DIFFERS
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def mean_ktu(self) -> float | None:
        values = [v for v in self.ktu.values() if v is not None]
        return sum(values) / len(values) if values else None

    @property
    def mean_rbo(self) -> float | None:
        return sum(self.rbo.values()) / len(self.rbo) if self.rbo else None

    def verdict_line(self) -> str:
        """One line that says what the reproduction is, with the thresholds it was held to."""
        if self.verdict == IDENTICAL:
            return "identical: the two run files have the same bytes"
        if self.verdict == REPRODUCED:
            return f"reproduced within the thresholds ({self.thresholds.describe()})"
        return f"differs: {'; '.join(self.reasons)} (thresholds: {self.thresholds.describe()})"

    def to_json(self) -> dict[str, Any]:
        def clean(v: float | None) -> float | None:
            return None if v is None or (isinstance(v, float) and math.isnan(v)) else v

        return {
            "task": self.task,
            "original": self.original,
            "reproduced": self.reproduced,
            "baselines": list(self.baselines) if self.baselines else None,
            "identical": self.identical,
            "sha256": {"original": self.sha256[0], "reproduced": self.sha256[1]},
            "verdict": self.verdict,
            "verdict_line": self.verdict_line(),
            "reasons": list(self.reasons),
            "thresholds": {"min_ktu": self.thresholds.min_ktu, "min_rbo": self.thresholds.min_rbo,
                           "max_rmse": self.thresholds.max_rmse, "alpha": self.thresholds.alpha},
            "order": {"rbo_p": self.p, "depth": self.depth, "mean_ktu": clean(self.mean_ktu),
                      "mean_rbo": clean(self.mean_rbo),
                      "per_topic": {t: {"ktu": clean(self.ktu.get(t)), "rbo": self.rbo[t]} for t in self.rbo}},
            "measures": [
                {"key": m.info.key, "label": m.info.label, "primary": m.info.primary,
                 "original": clean(m.original), "reproduced": clean(m.reproduced), "rmse": clean(m.rmse),
                 "t_test": {"p": m.p_value, "topics": m.topics},
                 "effect_ratio": clean(m.effect_ratio), "delta_ri": clean(m.delta_ri),
                 "per_topic_difference": {t: clean(v) for t, v in m.per_topic_difference.items()}}
                for m in self.measures
            ],
            "notes": list(self.notes),
        }


def _run_file(path: Path, task: Any) -> Path:
    path = Path(path)
    if path.is_dir():
        path = find_run_file(path, task.output.file)
    if not path.is_file():
        raise SharedTaskError(f"run file {path} does not exist")
    return path


def rankings(path: Path, task: Any, depth: int) -> dict[str, list[str]]:
    """Each topic's ranking in trec_eval's order; Task 3 ranks its answers by their text.
    A run that is not a ranking (MathQA's programs) has none: {} (only bytes and scores compare)."""
    if task.output.format not in RUN_LAYOUTS:
        return {}
    layout = RUN_LAYOUTS[task.output.format].short
    check_run_layout(path, task.output.format, task.id)
    if layout == "arqmath-task3":
        scored: dict[str, dict[str, float]] = {}
        for row in read_run(path, layout):
            scored.setdefault(row.topic, {}).setdefault(row.answer or "", row.score)
    else:
        scored = load_run_dict(path, layout)
    return {topic: rm.ranking(docs, depth) for topic, docs in scored.items()}


def _order(original: dict[str, list[str]], reproduced: dict[str, list[str]], p: float, depth: int
           ) -> tuple[dict[str, float | None], dict[str, float]]:
    """Per-topic KTU and RBO over the union of topics (a missing topic is an empty ranking)."""
    ktu: dict[str, float | None] = {}
    rbo: dict[str, float] = {}
    for topic in sorted(set(original) | set(reproduced)):
        a, b = original.get(topic, []), reproduced.get(topic, [])
        ktu[topic] = rm.ktu(a, b)  # None for a topic one side lacks: RBO (0 there) counts it
        rbo[topic] = rm.rbo(a, b, p, depth)
    return ktu, rbo


def compare(
    original: Path,
    reproduced: Path,
    task: Any,
    *,
    qrels: Path | None = None,
    truth_dir: Path | None = None,
    input_dir: Path | None = None,
    baselines: tuple[Path, Path] | None = None,
    thresholds: rm.Thresholds | None = None,
    p: float = rm.RBO_P,
    answer_map: Path | None = None,
) -> Comparison:
    """Compare ``reproduced`` with ``original`` for ``task`` (an id or a loaded Task).

    Without qrels only the document order is compared (and the verdict says so);
    ``baselines`` = (original baseline run, reproduced baseline run) adds ER and ΔRI.
    """
    if isinstance(task, str):
        from sharedtask.spec import load_task

        task = load_task(task)
    if not 0 < p < 1:
        raise SharedTaskError(f"RBO persistence p must be between 0 and 1, not {p}")
    thresholds = thresholds or rm.Thresholds()
    orig_path, rep_path = _run_file(original, task), _run_file(reproduced, task)
    base_paths = (_run_file(baselines[0], task), _run_file(baselines[1], task)) if baselines else None
    depth = task.output.max_results_per_topic or rm.DEPTH
    digests = (sha256(orig_path), sha256(rep_path))
    orig_rank, rep_rank = rankings(orig_path, task, depth), rankings(rep_path, task, depth)
    ktu, rbo = _order(orig_rank, rep_rank, p, depth)
    result = Comparison(task=task.id, original=str(orig_path), reproduced=str(rep_path),
                        identical=digests[0] == digests[1], sha256=digests, p=p, depth=depth, ktu=ktu, rbo=rbo,
                        measures=[], thresholds=thresholds,
                        baselines=(str(base_paths[0]), str(base_paths[1])) if base_paths else None)
    if qrels is not None or truth_dir is not None:
        def score(path: Path, name: str) -> EvaluationResult:
            return evaluate(path, task, qrels=qrels, truth_dir=truth_dir, input_dir=input_dir, per_topic=True,
                            run_name=name, answer_map=answer_map)

        orig_res, rep_res = score(orig_path, "original"), score(rep_path, "reproduced")
        base = (score(base_paths[0], "original baseline"), score(base_paths[1], "reproduced baseline")) \
            if base_paths else None
        result.measures = [_measure(info, orig_res, rep_res, base) for info in orig_res.measures
                           if info.official and info.key in rep_res.per_topic]
    elif base_paths:
        raise SharedTaskError("--baseline needs qrels: ER and ΔRI compare scores", hint="add --qrels F or --truth DIR")
    else:
        result.notes.append("no qrels given: only the document order was compared (add --qrels or --truth for "
                            "RMSE and the t-test)")
    if task.output.format not in RUN_LAYOUTS:
        result.notes.append(f"{task.output.format} runs are not rankings: KTU and RBO do not apply")
    only_orig = sorted(set(orig_rank) - set(rep_rank))
    only_rep = sorted(set(rep_rank) - set(orig_rank))
    if only_orig:
        result.notes.append(f"{len(only_orig)} topic(s) only in the original: {', '.join(only_orig[:10])}")
    if only_rep:
        result.notes.append(f"{len(only_rep)} topic(s) only in the reproduction: {', '.join(only_rep[:10])}")
    _judge(result)
    return result


def _measure(info: MeasureInfo, orig: EvaluationResult, rep: EvaluationResult,
             base: tuple[EvaluationResult, EvaluationResult] | None) -> MeasureComparison:
    a, b = orig.per_topic.get(info.key, {}), rep.per_topic.get(info.key, {})
    p_value, n = rm.paired_ttest(a, b)
    out = MeasureComparison(info=info, original=orig.scores[info.key], reproduced=rep.scores[info.key],
                            rmse=rm.rmse(a, b), p_value=p_value, topics=n,
                            per_topic_difference={t: b.get(t, 0.0) - a.get(t, 0.0) for t in sorted(set(a) | set(b))})
    if base is not None:
        ob, rb = base[0].per_topic.get(info.key, {}), base[1].per_topic.get(info.key, {})
        out.effect_ratio = rm.effect_ratio(a, ob, b, rb)
        out.delta_ri = rm.delta_ri(a, ob, b, rb)
    return out


def _judge(result: Comparison) -> None:
    """Set the verdict and the reasons it is not better."""
    if result.identical:
        result.verdict = IDENTICAL
        return
    t = result.thresholds
    reasons = []
    if result.mean_ktu is not None and result.mean_ktu < t.min_ktu:
        reasons.append(f"mean KTU {result.mean_ktu:.4f} < {t.min_ktu:g}")
    if result.mean_rbo is not None and result.mean_rbo < t.min_rbo:
        reasons.append(f"mean RBO {result.mean_rbo:.4f} < {t.min_rbo:g} (p={result.p:g})")
    for m in result.measures:
        if not math.isnan(m.rmse) and m.rmse > t.max_rmse:
            reasons.append(f"RMSE of {m.info.key} {m.rmse:.4f} > {t.max_rmse:g}")
        if m.p_value < t.alpha:
            reasons.append(f"paired t-test on {m.info.key}: p = {m.p_value:.3g} < {t.alpha:g}")
    result.reasons = reasons
    result.verdict = DIFFERS if reasons else REPRODUCED
