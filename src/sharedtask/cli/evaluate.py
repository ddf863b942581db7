"""``sharedtask evaluate``: official measures for one run, a leaderboard for several.

    sharedtask evaluate RUN... --task ID [--qrels FILE] [--truth DIR] [--input DATASET_DIR]
                        [--per-topic] [--json | --prototext | --csv] [--measures KEY ...]
                        [--significance {ttest,permutation}] [--grader FILE]
    sharedtask evaluate --tira --task ID [--input-run DIR --input-dataset DIR --output DIR]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sharedtask.cli import LazyConsole, err_console, escape, options
from sharedtask.errors import SharedTaskError

if TYPE_CHECKING:
    from sharedtask.tables import KeyedTable

# rich is imported on first output: a --json, --csv or --prototext call never loads it.


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "evaluate",
        help="score runs with the task's official measures (several runs: a leaderboard)",
        description="Score runs with the official measures of a task: each measure follows the organizers' "
                    "script named in its description (sharedtask.measures; docs/evaluation.md in the source). "
                    "Several runs give a leaderboard sorted by the primary measure; equal scores share a rank.",
    )
    p.add_argument("runs", nargs="*", type=Path, metavar="RUN", help="run file(s)")
    p.add_argument("--task", required=True, help="task id, e.g. arqmath-3-task1 (see `sharedtask tasks`)")
    p.add_argument("--qrels", type=Path, help="relevance qrels (overrides the one in --truth)")
    p.add_argument("--dataset", metavar="ID", help="the truth of a registry dataset (`sharedtask data list`) or "
                                                  "irds:<ir_datasets id>; without --qrels/--truth/--dataset the "
                                                  "task's official dataset is used")
    p.add_argument("--truth", type=Path, help="truth folder: qrels, quality qrels, answers.tsv, formulas/")
    p.add_argument("--input", type=Path, dest="input_dir", help="dataset folder (Task 2: the formula index)")
    p.add_argument("--answer-map", type=Path, metavar="FILE",
                   help="ARQMath-3 Task 3: the organizers' map (run name, topic, answer id; the run name is the "
                        "run file's name without extension); without it answers are matched by their text")
    p.add_argument("--grader", type=Path, metavar="FILE",
                   help="EXAM: who answers the exam questions, a YAML file (grader: http, base_url, model, "
                        "api_key_env, ...; docs/evaluation.md); default the offline answer-key grader")
    p.add_argument("--measures", nargs="+", metavar="KEY", help="only these measures (keys or ids)")
    p.add_argument("--per-topic", action="store_true", help="also show per-topic values")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="JSON on stdout")
    out.add_argument("--prototext", action="store_true", help="TIRA evaluation.prototext on stdout (one run)")
    out.add_argument("--csv", action="store_true", help="CSV on stdout (leaderboard / scores)")
    p.add_argument("--significance", nargs="?", const="ttest", choices=("ttest", "permutation"),
                   help="paired test of each run against the best run (default: ttest)")
    p.add_argument("--alpha", type=float, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--correction", choices=("holm", "bonferroni"), default="holm",
                   help="with --significance: correction of the all-pairs tests for multiple comparisons, per "
                        "measure (default holm: Holm-Bonferroni)")
    tira = p.add_argument_group("TIRA evaluator mode")
    tira.add_argument("--tira", action="store_true",
                      help="read $inputRun and $inputDataset, write $outputDir/evaluation.prototext")
    tira.add_argument("--input-run", type=Path, help="run directory (default $inputRun)")
    tira.add_argument("--input-dataset", type=Path, help="truth directory (default $inputDataset)")
    options.add_output(tira, "output directory (default $outputDir)")
    options.renamed_option(tira, "--output-dir", "--output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from sharedtask.evaluate import evaluate, leaderboard
    from sharedtask.evaluate.prototext import to_prototext
    from sharedtask.spec import load_task

    task = load_task(args.task)
    if not 0 < args.alpha < 1:
        raise SharedTaskError(f"--alpha {args.alpha:g}: the significance level must be between 0 and 1, e.g. 0.05")
    console = LazyConsole(highlight=False, soft_wrap=False)
    if args.tira:
        from sharedtask.evaluate.tira import evaluate_tira

        if args.runs:
            raise SharedTaskError("--tira reads $inputRun; do not give RUN files")
        result, path = evaluate_tira(task, args.input_run, args.input_dataset, args.output)
        err_console.print(f"wrote {path}")
        sys.stdout.write(to_prototext(result))
        return 0
    if not args.runs:
        raise SharedTaskError("no run given", hint="sharedtask evaluate RUN... --task ID --qrels FILE")
    if args.significance and len(args.runs) < 2:
        raise SharedTaskError("--significance compares runs: give at least two")
    if args.prototext and len(args.runs) > 1:  # before any run is read
        raise SharedTaskError(f"--prototext writes one run's evaluation; {len(args.runs)} runs given",
                              hint="give a single run, or use --json or --csv for several")
    per_topic = args.per_topic or bool(args.significance)
    truth, note = _official_truth(task.id, args)
    grader = None
    if args.grader is not None:
        from sharedtask.answers.llm import load_grader

        grader = load_grader(args.grader)
    results = {}
    for path in args.runs:
        name = _unique(path, results)
        try:
            results[name] = evaluate(path, task, qrels=args.qrels, truth_dir=truth, input_dir=args.input_dir,
                                     measures=args.measures, per_topic=per_topic, run_name=name,
                                     answer_map=args.answer_map, grader=grader)
        except SharedTaskError as exc:
            if note is None or "no topic of the" not in exc.message:
                raise
            raise SharedTaskError(f"{exc.message}; scored with the official qrels, as no --qrels/--truth was given",
                                  hint=exc.hint or "a run on the bundled sample? give --truth with the sample's truth") from None
        _refuse_empty(name, results[name], args.measures, note)
        if note:
            results[name].notes.insert(0, note)
    if len(results) == 1 and not args.significance:
        (result,) = results.values()
        if args.json:
            print(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
        elif args.prototext:
            sys.stdout.write(to_prototext(result))
        elif args.csv:
            _single_csv(result, args.per_topic)
        else:
            _show_single(console, result, args.per_topic)
        return 0
    if args.prototext:
        raise SharedTaskError("--prototext writes one run's evaluation; give a single run")
    board = leaderboard(results, task, test=args.significance, alpha=args.alpha, correction=args.correction)
    if args.json:
        data = board.to_json()
        data["results"] = {n: r.to_json() for n, r in results.items()}
        print(json.dumps(data, indent=2, ensure_ascii=False))
    elif args.csv:
        sys.stdout.write(board.to_csv())
    else:
        console.print(board.table())
        agreement = board.agreement_table()
        if agreement is not None:
            console.print(agreement)
        if board.test and board.pairs:
            console.print(_pairs_table(board))
        for name, result in results.items():
            for note in result.notes:
                console.print(f"[dim]{escape(name)}: {escape(note)}[/]")
        if args.per_topic:
            for m in board.measures:
                console.print(_per_topic_table(m.label, {n: r.per_topic.get(m.key, {}) for n, r in results.items()}))
    return 0


def _refuse_empty(name: str, result, measures: list[str] | None, truth_note: str | None) -> None:
    """Exit 2 with why, rather than a table of blank scores and exit 0.

    Why: a sample run scored on the official qrels (the field test) has topics the qrels
    know but no judged result; every mean is then undefined and the blank row read as a result.
    """
    if not result.measures:  # every asked measure left out (Task 3's AR and P@1 with nothing judged)
        why = next((n for n in result.notes if "not computed" in n), "none of the measures could be computed")
        raise SharedTaskError(f"{name}: nothing scored: {why}",
                              hint="leave out --measures to get the measures that need no judgements"
                              if measures else None)
    if all(math.isnan(v) for v in result.scores.values()):
        why = next((n for n in result.notes if "left out" in n or "unjudged" in n), "")
        why = why.split(": A.")[0].split(" (trec_eval")[0]  # the note without its list of topics
        raise SharedTaskError(f"{name}: nothing scored: no result of the run is judged in the qrels"
                              + (f" ({why})" if why else ""),
                              hint="a run on the sample has none of the official qrels' documents: give the "
                              "sample's truth (--truth DIR), or score a run on the official collection"
                              if truth_note else "wrong qrels or wrong --task?")


def _official_truth(task_id: str, args: argparse.Namespace) -> tuple[Path | None, str | None]:
    """The truth folder to use and a note saying which file it is, when it came from the
    dataset registry (--dataset, or the task's official dataset when nothing was given)."""
    if args.qrels is not None or args.truth is not None:
        if args.dataset:
            raise SharedTaskError("--dataset names the truth itself; give it without --qrels/--truth")
        return args.truth, None  # a registry dataset's truth folder named by path: evaluate() re-checks it
    from sharedtask.data import get_dataset, import_hint, official_dataset, official_truth, store

    if args.dataset:
        ds = get_dataset(args.dataset)
        if ds.task != task_id:
            raise SharedTaskError(f"dataset {ds.id} belongs to task {ds.task}, not {task_id}",
                                  hint=f"--task {ds.task}, or another --dataset")
        missing = store.assemble(ds, roles=("truth",), show_progress=False)
        if missing and import_hint(ds):
            raise SharedTaskError(f"dataset {ds.id} lacks {', '.join(f.target for f in missing)}",
                                  hint=import_hint(ds))
        found: tuple | None = (ds, store.dataset_dir(ds) / "truth")
    else:
        found = official_truth(task_id)
    if found is None:
        official = official_dataset(task_id)
        if official is not None and import_hint(official):  # not shipped (no licence to): imported by hand
            raise SharedTaskError(f"no truth given; the official truth of {task_id} ({official.id}) is not imported",
                                  hint=f"{import_hint(official)}, or --truth DIR")
        if official is not None:  # its truth comes through ir_datasets or a download: only when asked
            raise SharedTaskError(f"no qrels given; the official qrels of {task_id} are not shipped with sharedtask",
                                  hint=f"use --dataset {official.id} (fetched through ir_datasets or its "
                                       "source, with checksums), --qrels FILE or --truth DIR")
        raise SharedTaskError(f"no qrels given and the registry has no official qrels for {task_id}",
                              hint="use --qrels FILE, --truth DIR or --dataset ID")
    ds, truth = found
    files = ds.role("truth")
    qrels = next((f for f in files if f.path.startswith("qrels")), files[0])  # MathQA: the suite's JSON
    checked = store.check_truth(ds)  # the bytes about to be read are still the official ones
    entry = store.read_manifest(truth.parent).get("files", {}).get(qrels.target, {})
    origin = qrels.package or (f"ir_datasets {ds.irds}" if qrels.irds else qrels.url or entry.get("source", qrels.target))
    label = "qrels" if qrels.path.startswith("qrels") else "truth"
    return truth, (f"{label}: {ds.id} official {qrels.path} = {origin} (sha256 {checked.get(qrels.target, '?')[:16]}…, "
                   f"{truth / qrels.path})")


def _pairs_table(board) -> KeyedTable:
    """All pairs of runs on the primary measure: raw and corrected p, and whether the difference survives
    (both runs' names whole at any width: run A is the key, run B never wraps)."""
    from sharedtask.tables import Column, KeyedTable

    label = next(m.label for m in board.measures if m.key == board.primary)
    table = KeyedTable([Column("run A"), Column("run B", whole=True), Column("A - B", "right", whole=True),
                        Column("p", "right", whole=True), Column(f"p ({board.correction})", "right", whole=True),
                        Column("survives", whole=True)],
                       title=f"all pairs on {label}: paired {board.test}, {board.correction} correction, "
                             f"alpha {board.alpha:g}", title_justify="left")
    for pair in board.pairs_of(board.primary):
        table.add_row(escape(pair.run_a), escape(pair.run_b), f"{pair.difference:+.4f}", f"{pair.p:.3g}",
                      f"{pair.p_adjusted:.3g}", "[green]yes[/]" if board.survives(pair) else "no")
    return table


def _unique(path: Path, taken: dict) -> str:
    """A run's name in tables: TIRA's output/run.txt is named by its run folder (every run
    of `sharedtask run` is a run.txt), a name already taken by the whole path."""
    name = path.name
    if name in ("run.txt", "run.txt.gz") and path.parent.name == "output" and path.parent.parent.name:
        name = path.parent.parent.name
    if name in taken:
        name = str(path)
    return name


def _fmt(v: float) -> str:
    return "" if v is None or math.isnan(v) else f"{v:.4f}"


def _show_single(console: LazyConsole, result, per_topic: bool) -> None:
    from sharedtask.tables import Column, KeyedTable

    table = KeyedTable([Column("measure"), Column("value", "right", whole=True), Column("topics", "right", whole=True),
                        Column("procedure")], title=f"{escape(result.run)} on {result.task}")
    for m in result.measures:
        label = m.label + (" (primary)" if m.primary else "")
        table.add_row(escape(label), _fmt(result.scores[m.key]), str(result.topics_averaged.get(m.key, "")),
                      escape(m.procedure))
    console.print(table)
    for source in dict.fromkeys(m.source for m in result.measures):
        console.print(f"[dim]source: {escape(source)}[/]")
    averaging = {m.averaging for m in result.measures}
    if len(averaging) == 1:
        console.print(f"[dim]averaging: {escape(averaging.pop())}[/]")
    else:
        for m in result.measures:
            console.print(f"[dim]{m.key}: {escape(m.averaging)}[/]")
    for note in result.notes:
        console.print(f"note: {escape(note)}")
    if per_topic:
        console.print(_per_topic_table(None, {m.label: result.per_topic[m.key] for m in result.measures}))


def _per_topic_table(label: str | None, values: dict[str, dict[str, float]]) -> KeyedTable:
    """One row a topic, one column a run (or a measure): each header, a run's name, is kept
    whole; when they do not fit side by side each topic becomes a block, a line a run."""
    from sharedtask.tables import Column, KeyedTable

    topics = sorted({t for d in values.values() for t in d}, key=_topic_key)
    t = KeyedTable([Column("topic", whole=True), *[Column(escape(name), "right", whole=True) for name in values]],
                   title="per topic" + (f": {label}" if label else ""))
    for topic in topics:
        t.add_row(escape(topic), *[_fmt(values[n].get(topic)) for n in values])
    return t


def _single_csv(result, per_topic: bool) -> None:
    import csv

    writer = csv.writer(sys.stdout, lineterminator="\n")
    if per_topic:
        writer.writerow(["topic"] + [m.key for m in result.measures])
        topics = sorted({t for d in result.per_topic.values() for t in d}, key=_topic_key)
        for topic in topics:
            writer.writerow([topic] + [_csv(result.per_topic[m.key].get(topic)) for m in result.measures])
        writer.writerow(["all"] + [_csv(result.scores[m.key]) for m in result.measures])
    else:
        writer.writerow(["measure", "value", "topics"])
        for m in result.measures:
            writer.writerow([m.key, _csv(result.scores[m.key]), result.topics_averaged.get(m.key, "")])


def _csv(v: float | None) -> str:
    return "" if v is None or math.isnan(v) else repr(v)


def _topic_key(topic: str) -> tuple:
    """Natural order: A.2 before A.10, 2 before 10."""
    head, _, tail = topic.rpartition(".")
    return (head, int(tail)) if tail.isdigit() else (topic, 0)
