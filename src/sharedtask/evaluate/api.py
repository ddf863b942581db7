"""``evaluate()``: score one run for one task with the task's declared measures.

Which files: ``qrels`` (overrides the relevance qrels), ``truth_dir`` (the task's
truth contract: qrels.tsv / qrels.txt, qrels-quality.txt, answers.tsv, formulas/*.tsv)
and ``input_dir`` (the dataset: the formula index for Task 2). Which measures: the
task spec's ``measures`` (their ``key``), optionally narrowed by ``measures=``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sharedtask import families, formats
from sharedtask.errors import SharedTaskError, choices_hint
from sharedtask.formats.runfile import find_run_file
from sharedtask import measures as registry
from sharedtask.evaluate import arqmath, mathqa, readers, task3, touche, trec
from sharedtask.evaluate.result import EvaluationResult, MeasureInfo

if TYPE_CHECKING:
    from sharedtask.answers.exam import Grader

Qrels = dict[str, dict[str, int]]


def _load_task(task):
    if isinstance(task, str):
        from sharedtask.spec import load_task

        return load_task(task)
    return task


def _truth_path(task, truth_dir: Path | None, role: str) -> Path | None:
    """The truth file of ``role`` inside ``truth_dir`` (None if either is missing)."""
    spec = task.truth.file(role)
    if spec is None or truth_dir is None:
        return None
    path = Path(truth_dir) / spec.path
    return path if path.exists() else None


def _selected(task, measures: list[str] | None):
    specs = list(task.measures)
    if not measures:
        return specs
    wanted = []
    for name in measures:
        matches = [m for m in specs if m.key == name] or [m for m in specs if m.id == name]
        if not matches:
            raise SharedTaskError(f"task {task.id} has no measure {name!r}",
                                  hint=choices_hint(name, (m.key for m in specs), "measures"))
        wanted.extend(m for m in matches if m not in wanted)
    return [m for m in specs if m in wanted]


def _mean(values: dict[str, float], measure: str = "map") -> float:
    return trec.aggregate(measure, list(values.values())) if values else float("nan")


def _no_overlap(run_topics: set[str], qrels: Qrels, what: str = "run") -> SharedTaskError:
    sample_run = ", ".join(sorted(run_topics)[:3]) or "none"
    sample_qrels = ", ".join(sorted(qrels)[:3])
    return SharedTaskError(
        f"no topic of the {what} is in the qrels (run topics: {sample_run}...; qrels topics: {sample_qrels}...)",
        hint="wrong qrels or wrong --task? Refusing to report 0.0 for a run that was never judged",
    )


class _Qrels:
    """Loads each qrels role once."""

    def __init__(self, task, qrels: Path | None, truth_dir: Path | None) -> None:
        self.task, self.override, self.truth_dir = task, qrels, truth_dir
        self.cache: dict[str, Qrels | None] = {}

    def path(self, role: str) -> Path | None:
        if role == "relevance" and self.override is not None:
            return Path(self.override)
        return _truth_path(self.task, self.truth_dir, role)

    def get(self, role: str) -> Qrels | None:
        if role not in self.cache:
            path = self.path(role)
            self.cache[role] = None if path is None else readers.load_qrels(path)
        return self.cache[role]


@dataclass
class Scoring:
    """One run to score, as a family's evaluator receives it (``sharedtask.families``: its
    ``evaluator`` adds the measures' values and notes to ``result``)."""

    task: Any
    run_path: Path
    specs: list
    source: _Qrels
    input_dir: Path | None
    answer_map: Path | None
    grader: Grader | None
    result: EvaluationResult



def evaluate(
    run_path: Path,
    task,
    *,
    qrels: Path | None = None,
    truth_dir: Path | None = None,
    input_dir: Path | None = None,
    measures: list[str] | None = None,
    per_topic: bool = False,
    run_name: str | None = None,
    answer_map: Path | None = None,
    grader: Grader | None = None,
) -> EvaluationResult:
    """Score ``run_path`` for ``task`` (a task id or a loaded Task) with its official measures.

    ``answer_map`` (ARQMath-3 Task 3): the organizers' map file ``run_name, topic, answer id``
    that ties each answer to its assessment; without it answers are matched by their text.
    ``grader``: who answers the EXAM questions (``sharedtask.answers.exam.Grader``; default
    the offline answer-key grader).
    """
    task = _load_task(task)
    run_path = Path(run_path)
    if run_path.is_dir():  # a TIRA output directory: its run.txt / run.txt.gz
        run_path = find_run_file(run_path, task.output.file)
    if not run_path.is_file():
        raise SharedTaskError(f"run file {run_path} does not exist")
    specs = _selected(task, measures)
    if qrels is None and truth_dir is None:
        raise SharedTaskError("no qrels given", hint="use --qrels FILE or --truth DIR")
    if truth_dir is not None and Path(truth_dir).is_file():
        raise SharedTaskError(f"--truth {truth_dir} is a file, not a folder",
                              hint=f"give a qrels file as --qrels {truth_dir}, or the dataset's truth folder as --truth")
    _check_placed_truth(truth_dir, qrels)
    family = families.get(task.family)
    if answer_map is not None and family.evaluator != f"{__name__}:score_task3":  # else silently unused
        raise SharedTaskError(f"--answer-map ties ARQMath Task 3 answers to their assessments; {task.id} has no "
                              "such answers", hint="drop --answer-map")
    source = _Qrels(task, Path(qrels) if qrels else None, Path(truth_dir) if truth_dir else None)
    if family.qrels:
        if source.path("relevance") is None:
            raise SharedTaskError(f"the truth folder {truth_dir} has no relevance qrels "
                                  f"({task.truth.file('relevance').path})", hint="or give --qrels FILE")
        readers.check_run_layout(run_path, task.output.format, task.id)
    result = EvaluationResult(task=task.id, run=run_name or run_path.name, measures=[])
    job = Scoring(task, run_path, specs, source, Path(input_dir) if input_dir else None, answer_map, grader, result)
    families.resolve(family.evaluator)(job)
    if not per_topic:
        result.per_topic = {}
    return result


def _check_placed_truth(truth_dir: Path | None, qrels: Path | None) -> None:
    """Truth read from a registry dataset's placed folder is re-checked before it scores (the
    CLI, the demo and the service all come through here): a changed file is refused in one line
    naming it and ``sharedtask data verify`` (sharedtask.data.store.check_truth)."""
    folders = {Path(truth_dir)} if truth_dir is not None else set()
    if qrels is not None:
        folders.add(Path(qrels).parent)
    if not any(folder.name == "truth" for folder in folders):
        return
    from sharedtask.data import placed_dataset, store

    for folder in folders:
        ds = placed_dataset(folder)
        if ds is not None:
            store.check_truth(ds, folder.parent)


def _info(spec) -> MeasureInfo:
    measure = registry.get(spec.id)
    return MeasureInfo(key=spec.key, id=spec.id, label=spec.label, procedure=spec.procedure,
                       qrels_role=spec.qrels_role, primary=spec.primary, official=spec.official,
                       averaging=registry.AVERAGING[measure.averaging], source=measure.source,
                       description=measure.description)


def _store(result: EvaluationResult, spec, values: dict[str, float]) -> None:
    """Record a measure's per-topic values and their mean (trec_eval's own averaging)."""
    info = _info(spec)
    result.measures.append(info)
    result.per_topic[info.key] = values
    result.scores[info.key] = _mean(values, registry.get(spec.id).trec_eval or "map")
    result.topics_averaged[info.key] = len(values)


def _order_notes(result: EvaluationResult, order: dict[str, list[tuple[int, float, str]]], what: str) -> None:
    _order_count_notes(result, *trec.count_order_changes(order), what)


def _order_count_notes(result: EvaluationResult, ties: int, contradictions: int, what: str) -> None:
    if ties:
        result.notes.append(
            f"ties changed the order of {ties} topic(s) compared to the rank column: trec_eval sorts by "
            f"score, equal scores by {what} descending (docs/evaluation.md)")
    if contradictions:
        result.notes.append(
            f"in {contradictions} topic(s) the scores do not decrease with the rank column; "
            "trec_eval follows the scores")


# --- ARQMath Tasks 1 and 2 ----------------------------------------------------------------

def score_prime_task1(job: Scoring) -> None:
    """ARQMath Task 1: the prime run of answer posts."""
    _arqmath_prime(job.task, job.run_path, job.specs, job.source, job.input_dir, job.result, job.grader, task2=False)


def score_prime_task2(job: Scoring) -> None:
    """ARQMath Task 2: the prime run of visual ids."""
    _arqmath_prime(job.task, job.run_path, job.specs, job.source, job.input_dir, job.result, job.grader, task2=True)


def _arqmath_prime(task, run_path: Path, specs, source: _Qrels, input_dir: Path | None,
                   result: EvaluationResult, grader: Grader | None = None, *, task2: bool) -> None:
    qrels = source.get("relevance")
    exam_specs = [s for s in specs if registry.get(s.id).input == "exam-passages"]
    specs = [s for s in specs if s not in exam_specs]
    if not task2:
        prime = arqmath.prime_task1(run_path, qrels)
        unit = "post"
    else:
        instances, _ = arqmath.read_task2_instances(run_path)
        visual = _visual_ids(task, source.truth_dir, input_dir, {f for d in instances.values() for f in d})
        prime = arqmath.prime_task2(instances, visual, qrels)
        unit = "visual id"
        if prime.missing_formulas:
            result.notes.append(f"{prime.missing_formulas} formula id(s) not in the index (skipped, as the "
                                "official de-duplication script does)")
        if prime.formula_duplicates:
            result.notes.append(f"{prime.formula_duplicates} formula instance(s) dropped: a higher-scored "
                                "instance with the same visual id came first")
    if not prime.run_topics & set(qrels):
        raise _no_overlap(prime.run_topics, qrels)
    if prime.duplicates:
        result.notes.append(f"{prime.duplicates} repeated (topic, {unit}) line(s) of judged {unit}s ignored "
                            "(first occurrence kept)")
    if prime.outside_qrels:
        missing = len(prime.run_topics - set(qrels))
        result.notes.append(f"{missing} run topic(s) are not in the qrels ({prime.outside_qrels} lines ignored)")
    result.notes.append(f"prime run: {sum(len(d) for d in prime.run.values())} judged of {prime.lines} "
                        f"lines; {prime.unjudged} unjudged {unit}(s) removed")
    dropped = sorted(set(qrels) - set(prime.run))
    if dropped:
        result.notes.append(
            f"{len(dropped)} of {len(qrels)} qrels topic(s) have no judged result in the run and are left out "
            f"of the means (trec_eval without -c, as the official scripts run it): {', '.join(dropped[:10])}"
            + (" ..." if len(dropped) > 10 else ""))
    _order_notes(result, prime.order, "id")
    if task2 and not prime.run:
        _empty_prime_task2(result, specs)
    else:
        for spec, values in zip(specs, _trec_eval(qrels, prime.run, specs)):
            _store(result, spec, values)
    if exam_specs:
        _exam_passages(task, run_path, exam_specs, source, input_dir, qrels, result, grader)


def _empty_prime_task2(result: EvaluationResult, specs) -> None:
    """A Task 2 run without one judged visual id: its prime file is empty, and the official
    results script gives an empty prime file 0.0 for nDCG′, MAP′, P′@10 and bpref without
    calling trec_eval (approach0/pya0 e904db1, eval-arqmath1-task2/task2_get_results.py,
    lines 9-10, 23-24, 37-38 and 51-52: ``if os.path.getsize(...) == 0: score = '0.0'``)."""
    for spec in specs:
        info = _info(spec)
        result.measures.append(info)
        result.per_topic[info.key] = {}
        result.scores[info.key] = 0.0
        result.topics_averaged[info.key] = 0
    result.notes.append("no judged visual id in the run: its prime file is empty, which the official results script "
                        "(task2_get_results.py) scores 0.0 for every measure, as here")


def _exam_questions(task, source: _Qrels) -> dict[str, list] | None:
    """topic -> its exam questions (the truth's exam.jsonl), None when the truth has none."""
    path = _truth_path(task, source.truth_dir, "exam")
    if path is None:
        return None
    exam: dict[str, list] = {}
    for question in formats.read_exam(path):
        exam.setdefault(question.topic, []).append(question)
    return exam


def _exam_passages(task, run_path: Path, specs, source: _Qrels, input_dir: Path | None, qrels: Qrels,
                   result: EvaluationResult, grader: Grader | None) -> None:
    """EXAM Cover and EXAM qrels (sharedtask.evaluate.exam_cover): the run's top 20 passages,
    their text from the dataset's Posts.xml, graded against the truth's exam questions."""
    from sharedtask.evaluate import exam_cover

    names = ", ".join(s.key for s in specs)
    exam = _exam_questions(task, source)
    posts_spec = task.input.file("posts")
    posts = Path(input_dir) / posts_spec.path if input_dir is not None and posts_spec is not None else None
    if exam is None:
        result.notes.append(f"{names} not computed: the truth folder has no exam questions (exam.jsonl)")
        return
    if posts is None or not posts.is_file():
        result.notes.append(f"{names} not computed: the passages' text comes from the corpus; give --input "
                            "DATASET_DIR (with Posts.xml)")
        return
    pool = {topic: set(qrels.get(topic, {})) for topic in exam}
    inp = exam_cover.load(run_path, exam, posts, pool, grader)
    missing = sum(1 for t in exam for d in inp.ranked.get(t, []) if d not in inp.texts)
    if missing:
        result.notes.append(f"EXAM: {missing} ranked post(s) are not answers of the corpus and answer no question")
    for spec in specs:
        _store(result, spec, registry.get(spec.id).procedure()(inp))


def _trec_eval(qrels: Qrels, run: dict[str, dict[str, float]], specs) -> list[dict[str, float]]:
    """Per-topic values of trec_eval measures, one pytrec_eval pass per relevance level."""
    wanted = [registry.get(spec.id) for spec in specs]
    by_level: dict[int, set[str]] = {}
    for m in wanted:
        by_level.setdefault(m.relevance_level, set()).add(m.trec_eval)  # type: ignore[arg-type]
    values = {level: trec.per_topic(qrels, run, names, relevance_level=level) for level, names in by_level.items()}
    return [{t: v[m.trec_eval] for t, v in values[m.relevance_level].items()} for m in wanted]


def _visual_ids(task, truth_dir: Path | None, input_dir: Path | None, wanted: set[str]) -> dict[str, str]:
    """formula id -> visual id for the run's formula ids, from the truth's or the input's index."""
    files: list[Path] = []
    truth_spec = task.truth.file("formulas")
    if truth_dir is not None and truth_spec is not None:
        files = truth_spec.matches(truth_dir)
    input_spec = task.input.file("formulas")
    if not files and input_dir is not None and input_spec is not None:
        files = input_spec.matches(input_dir)
    if not files:
        raise SharedTaskError(
            "ARQMath Task 2 needs the formula index to map formula ids to visual ids",
            hint="give --input DATASET_DIR (formulas/*.tsv) or --truth with a formulas/ folder",
        )
    mapping: dict[str, str] = {}
    for path in files:
        mapping.update(formats.load_visual_ids(path, only=wanted))
    return mapping


# --- ARQMath Task 3 -----------------------------------------------------------------------

def _known_answers(path: Path) -> dict[str, dict[str, str]]:
    """Task 3 known answers as {topic: {answer id: text}}."""
    known: dict[str, dict[str, str]] = {}
    for answer in formats.read_answers_tsv(path):
        known.setdefault(answer.topic, {})[answer.answer_id] = answer.text
    return known


def score_task3(job: Scoring) -> None:
    """ARQMath-3 Task 3: one answer per topic."""
    _arqmath_task3(job.task, job.run_path, job.specs, job.source, job.answer_map, job.result, job.grader)


def _arqmath_task3(task, run_path: Path, specs, source: _Qrels, answer_map: Path | None,
                   result: EvaluationResult, grader: Grader | None = None) -> None:
    qrels = source.get("relevance")
    run = task3.read_task3_run(run_path)
    if not set(run.answers) & set(qrels):
        raise _no_overlap(set(run.answers), qrels)
    answers_path = _truth_path(task, source.truth_dir, "answers")
    if answers_path is None and (answer_map is None or any(s.id == "lexical_overlap" for s in specs)):
        raise SharedTaskError("ARQMath-3 Task 3 needs the known answers (answers.tsv in --truth) to match answers "
                              "to their assessments and to compute Lexical Overlap",
                              hint="give --truth DIR (and --answer-map FILE for the organizers' map)")
    inp = task3.Task3Input(run=run, qrels=qrels, known=_known_answers(answers_path) if answers_path else {},
                           threshold=task.truth.relevant_threshold, max_chars=task.output.max_answer_chars or 1200,
                           grader=grader)
    mapping = task3.read_answer_map(answer_map, run_path.stem) if answer_map is not None else None
    ignored = task3.check_repeated(run_path, run, mapping)
    if ignored:
        result.notes.append(f"topic(s) answered more than once but not named by the answer map: {', '.join(ignored[:10])}; "
                            "the official manual script counts them as missing, as here (Lexical Overlap reads "
                            "the first answer of each)")
    for taken in run.swallowed:
        where = ", ".join(f"{topic or '(blank)'} (line {n})" for n, topic in taken.lines[:10])
        result.notes.append(f"line {taken.line}: the answer to topic {taken.topic} opens a quote (\") it does not close on "
                            f"that line; read as the official scripts read the run (csv quoting), it runs over "
                            f"{len(taken.lines)} more line(s) and swallows {where}: not scored, as there")
    if run.misread:
        where = ", ".join(f"{m.topic} (line {m.line}, column {m.column})" for m in run.misread[:10])
        result.notes.append(f"{len(run.misread)} line(s) read as the official scripts' csv quoting reads them, not as "
                            f"written (a field that begins with \" loses its quotes, \"\" is one \"): {where}")
    task3.judge(inp, mapping)
    how = "through the answer map (official)" if mapping is not None else "by their text among the known answers"
    result.notes.append(f"answers matched to assessments {how}: {len(inp.judged)} judged, "
                        f"{len(inp.unjudged)} unjudged, {len(inp.ambiguous)} ambiguous")
    if inp.ambiguous:
        shown = "; ".join(f"{t}: {', '.join(ids)}" for t, ids in sorted(inp.ambiguous.items())[:5])
        result.notes.append(f"{len(inp.ambiguous)} answer(s) have the text of several known answers with different "
                            f"grades and are left unjudged ({shown}); give the organizers' map (--answer-map)")
    exam = _exam_questions(task, source)
    if exam is not None:
        inp.exam = exam
    elif any(s.qrels_role == "exam" for s in specs):
        result.notes.append("EXAM and n-EXAM not computed: the truth folder has no exam questions (exam.jsonl)")
        specs = [s for s in specs if s.qrels_role != "exam"]
    manual = [s for s in specs if s.id in ("ar", "p1")]
    if manual and not inp.judged:
        # A row of zeros would read as "every answer was wrong"; the truth is that no
        # assessor has seen them (ARQMath-3 overview: LO is for new systems).
        result.notes.append("AR and P@1 not computed: none of this run's answers has been judged (they are manual "
                            "measures); Lexical Overlap is the measure for unjudged answers")
    for spec in specs:
        if spec in manual and not inp.judged:
            continue
        values = registry.get(spec.id).procedure()(inp)
        if spec.id == "lexical_overlap":
            if not values:
                result.notes.append("lexical_overlap: no answered topic has a known relevant (H+M) answer, so its "
                                    "mean is undefined (the official script stops there)")
            missing = sorted(set(run.answers) - set(values))
            if missing:
                result.notes.append(f"lexical_overlap: {len(missing)} answered topic(s) have no known relevant answer "
                                    f"and are left out, as the official script does: {', '.join(missing[:10])}")
            result.notes.append("Lexical Overlap tokens: RoBERTa byte-level pre-tokens stand in for the MathBERTa "
                                "tokenizer of the official script (docs/evaluation.md)")
        _store(result, spec, values)


# --- Plain TREC runs (Touché, semantic search) ----------------------------------------------

#: lines of a TREC run scored at a time (whole topics); bounds the evaluator's memory
TREC_PART_LINES = 1_000_000


@dataclass
class _TrecScan:
    """What scoring a TREC run part by part adds up: per-topic values and the notes' counts."""

    topics: set[str] = field(default_factory=set)
    duplicates: int = 0
    top5_ties: int = 0
    order_ties: int = 0
    contradictions: int = 0
    values: dict[str, dict[str, float]] = field(default_factory=dict)


def _scan_trec_parts(parts, plans, top5_ties: bool) -> _TrecScan:
    """Score each part with every planned measure. Each measure here is a per-topic figure
    (trec_eval's ``-q`` values; the official Touché nDCG@5 per topic), so the values of the
    parts are those of the whole run; a part's qrels are only its own topics'. ``top5_ties``:
    count the topics with equal ranks at the top-5 cut (only the official Touché nDCG@5 needs it)."""
    scan = _TrecScan(values={spec.key: {} for spec, _, _ in plans})
    for part in parts:
        scan.topics.update(part.topics)
        scan.duplicates += part.duplicates
        if top5_ties:
            scan.top5_ties += touche.rank_ties_in_top5(part)
        ties, contradictions = part.order_changes()
        scan.order_ties += ties
        scan.contradictions += contradictions
        scores = None
        for spec, measure, qrels in plans:
            if qrels is None:
                continue
            mine = {t: qrels[t] for t in part.topics if t in qrels}
            if not mine:
                continue
            if measure.trec_eval is not None:
                scores = scores if scores is not None else part.score_dict()
                (values,) = _trec_eval(mine, scores, [spec])
            else:
                values = measure.procedure()(part, mine)
            scan.values[spec.key].update(values)
    return scan


def score_trec_run(job: Scoring) -> None:
    """A plain TREC run (Touché, semantic search)."""
    _trec_run(job.task, job.run_path, job.specs, job.source, job.result)


def _trec_run(task, run_path: Path, specs, source: _Qrels, result: EvaluationResult) -> None:
    """Every family whose measures read a plain TREC run: a new task of such a family needs
    no code here, only its measures in the registry.

    A run grouped by topic is scored ``TREC_PART_LINES`` lines at a time, so memory does not
    grow with the run; a run whose topics are interleaved is read whole (same numbers)."""
    relevance = source.get("relevance")
    plans = []
    for spec in specs:
        measure = registry.get(spec.id)
        qrels = source.get(spec.qrels_role)
        truth_file = task.truth.file(spec.qrels_role)
        if qrels is not None and measure.gains and truth_file is not None and truth_file.gains:
            qrels = trec.apply_gains(qrels, truth_file.gains)
        plans.append((spec, measure, qrels))
    touche_official = any(measure.averaging == "touche-official" for _, measure, _ in plans)
    try:
        scan = _scan_trec_parts(touche.read_trec_run_in_parts(run_path, TREC_PART_LINES), plans, touche_official)
    except touche.TopicsInterleaved:
        scan = _scan_trec_parts([touche.read_trec_run(run_path)], plans, touche_official)
    if not scan.topics & set(relevance):
        raise _no_overlap(scan.topics, relevance)
    if scan.duplicates and touche_official:
        result.notes.append(f"{scan.duplicates} repeated (topic, doc) line(s): the official nDCG@5 counts each line "
                            "as the organizers' script does (it can then exceed 1); ndcg_cut_5 keeps the first "
                            "(trec_eval itself refuses such runs)")
    elif scan.duplicates:
        result.notes.append(f"{scan.duplicates} repeated (topic, doc) line(s): the first of each is kept "
                            "(trec_eval itself refuses such runs)")
    if touche_official and scan.top5_ties:
        result.notes.append(f"{scan.top5_ties} topic(s) have equal ranks at the top-5 cut: the "
                            "organizers' script sorts them in an unspecified order; we keep file order")
    _order_count_notes(result, scan.order_ties, scan.contradictions, "docno")
    skipped = []
    for spec, measure, qrels in plans:
        if qrels is None:
            skipped.append(spec.key)
            continue
        values = scan.values[spec.key]
        _store(result, spec, values)
        dropped = len(set(qrels) - set(values))
        if dropped and measure.averaging == "touche-official":
            result.notes.append(
                f"{spec.key}: {dropped} qrels topic(s) without a judged document in the run's top 5 (or "
                f"without a positive judgment) are left out of the mean (clef21/evaluate.py)")
    if skipped:
        result.notes.append(f"not computed, their qrels were not given: {', '.join(skipped)} "
                            "(give --truth DIR with the quality qrels)")
    if not result.measures:
        raise SharedTaskError("none of the requested measures could be computed")
    for key, value in result.scores.items():
        if isinstance(value, float) and math.isnan(value):
            result.notes.append(f"{key}: no topic counts, the mean is undefined")


# --- MathQA --------------------------------------------------------------------------------

def score_mathqa(job: Scoring) -> None:
    """MathQA: programs scored against the suite's files, no qrels."""
    if job.source.truth_dir is None:
        raise SharedTaskError("MathQA needs its truth folder (the suite's JSON and broken list)",
                              hint="give --truth DIR")
    _mathqa(job.task, job.run_path, job.specs, job.source.truth_dir, job.result)


def _mathqa(task, run_path: Path, specs, truth_dir: Path, result: EvaluationResult) -> None:
    gold_path, broken_path = _truth_path(task, truth_dir, "gold"), _truth_path(task, truth_dir, "broken")
    if gold_path is None:
        raise SharedTaskError(f"the truth folder {truth_dir} has no {task.truth.file('gold').path}",
                              hint="give --truth DIR with the MathQA suite's JSON file")
    gold = formats.read_gold(gold_path)
    broken = formats.read_broken(broken_path) if broken_path is not None else set()
    run = formats.read_programs(run_path, [p.number for p in gold])
    unknown = sorted(set(run.programs) - {p.number for p in gold}, key=lambda x: (len(x), x))
    if unknown:
        result.notes.append(f"{len(unknown)} program(s) for problems the truth does not have are ignored: "
                            f"{', '.join(unknown[:10])}")
    inp = mathqa.MathqaInput(gold=gold, broken=broken, programs=run.programs)
    for spec in specs:
        _store(result, spec, registry.get(spec.id).procedure()(inp))
    answered = sum(1 for p in gold if run.programs.get(p.number, "").strip())
    result.notes.append(f"{answered} of {len(gold)} problems answered ({run.form}, beam {run.beam}: the first "
                        f"program of each problem counts); {len(broken)} on the suite's broken list")
    if inp.reasons:
        shown = "; ".join(f"{k}: {v}" for k, v in list(inp.reasons.items())[:3])
        result.notes.append(f"{len(inp.reasons)} program(s) have no value and are never guessed as a number ({shown})")
    if inp.counts:
        result.notes.append("option matching: " + ", ".join(f"{k} {v}" for k, v in sorted(inp.counts.items())))
    if inp.math_options:
        result.notes.append(f"{inp.math_options} option(s) without a value under the suite's rules read as math "
                            "(sharedtask.answers.equivalence)")
