"""``sharedtask reproduce``: re-run recorded software and compare with the original run.

    sharedtask reproduce RECORD [--trust-record] [--input DIR] [--input-run DIR] [--output DIR] [--qrels F | --truth DIR] [thresholds] [--cpu-profile NAME] [--json]
    sharedtask reproduce --all [--update] [--task ID]... [--references DIR] [--output DIR] [--report FILE]
                               [--cpu-profile NAME] [--json]

Exit code: 0 every comparison identical or reproduced (or references updated), 1 a run
differs or failed, 2 the tool could not run. ``--all`` is what CI calls.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sharedtask.cli import LazyConsole, escape, options
from sharedtask.cli.compare import add_comparison_options, exit_code, show, thresholds
from sharedtask.errors import SharedTaskError

console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="re-run a recorded run (or every baseline) and compare with the original",
        description="Re-run a run from its run-record.json (the same image id, command, dataset and limits) "
                    "and compare the new run with the recorded one, as `sharedtask compare` does. With --all, "
                    "re-run every baseline of tira.yml on the sample of each task it serves and compare with "
                    "the reference runs stored in baselines/reference-runs/ (--update stores new ones).",
    )
    p.add_argument("record", nargs="?", type=Path, metavar="RECORD",
                   help="run-record.json of the run to reproduce (or the folder holding it)")
    options.add_output(p, "output folder of the re-run (must be empty); with --all where the re-runs go "
                          "(default ./sharedtask-reproduce)")
    p.add_argument("--trust-record", action="store_true",
                   help="honour the record's mounts, network, user, runtime and limits as recorded (by default "
                        "they come from the task's policy and a record asking for more is refused)")
    # --input DIR (the dataset's input folder; default: the recorded one when it is the task's sample
    # or a dataset of the data store) comes with the comparison options below
    p.add_argument("--input-run", type=Path, metavar="DIR",
                   help="the input run to mount: a stage folder or a first stage's run (default: a re-ranker's "
                        "recorded stage folder while it holds the recorded candidates; any other recorded input run "
                        "is mounted only with --trust-record)")
    p.add_argument("--all", action="store_true", help="every baseline of the manifest on its tasks' samples")
    p.add_argument("--update", action="store_true", help="with --all: store the new runs as the references")
    p.add_argument("--task", action="append", metavar="ID", help="with --all: only these tasks (repeatable)")
    p.add_argument("--manifest", type=Path, metavar="FILE", help="manifest (default: the project's tira.yml)")
    p.add_argument("--references", type=Path, metavar="DIR",
                   help="reference runs folder (default: baselines/reference-runs)")
    p.add_argument("--report", type=Path, metavar="FILE", help="with --all: also write an HTML report")
    p.add_argument("--cpu-profile", metavar="NAME",
                   help="emulate an older CPU in the re-runs: native, haswell (no AVX-512) or nehalem (no AVX); "
                        "default: the recorded profile, with --all $SHAREDTASK_CPU_PROFILE or native")
    add_comparison_options(p)
    options.renamed_option(p, "--dataset", "--input")  # --dataset is a registry id elsewhere
    p.add_argument("--json", action="store_true", help="JSON on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.all == (args.record is not None):
        raise SharedTaskError("give either RECORD or --all", hint="sharedtask reproduce RECORD | --all")
    if args.update and not args.all:
        raise SharedTaskError("--update stores reference runs of the baselines: use it with --all")
    if args.all and (args.trust_record or args.input_dir or args.input_run):
        raise SharedTaskError("--trust-record, --input and --input-run are for one RECORD, not --all")
    thresholds(args)  # the user's mistakes (a bound out of range, an unknown profile) before Docker's
    if args.cpu_profile is not None:
        from sharedtask.sandbox.cpu import profile

        profile(args.cpu_profile)
    if args.all:
        return _all(args)
    from sharedtask.reproduce import reproduce_record

    rep = reproduce_record(args.record, output_dir=args.output, qrels=args.qrels, truth_dir=args.truth,
                           thresholds=thresholds(args), p=args.rbo_p, cpu=args.cpu_profile,
                           trust_record=args.trust_record, input_dir=args.input_dir, input_run=args.input_run)
    if rep.comparison is None:
        if args.json:
            print(json.dumps({"verdict": "failed", "error": rep.error, "output": str(rep.reproduced_dir)}, indent=2))
        else:
            console.print(f"[bold red]the re-run failed[/]: {escape(rep.error or '')}")
        return 1
    if args.json:
        data = rep.comparison.to_json()
        data["record"] = rep.sandbox.record_path.as_posix()
        data["cpu_note"] = rep.cpu_note
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        console.print(f"re-run written to {escape(str(rep.reproduced_dir))}")
        show(console.real, rep.comparison)
        if rep.cpu_note:
            console.print(f"[yellow]CPU[/]: {escape(rep.cpu_note)}")
    return exit_code(rep.comparison)


def _all(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from sharedtask.manifest import load_manifest
    from sharedtask.reproduce import reproduce_baselines
    from sharedtask.sandbox.runner import docker_client
    from sharedtask.spec import load_task
    from sharedtask.tables import Column, KeyedTable

    manifest = load_manifest(args.manifest)
    tasks = [load_task(t) for t in args.task] if args.task else None
    docker_client()  # one clear line when Docker is not there, before any work
    out = (args.output or Path("sharedtask-reproduce")).resolve()
    stderr = Console(stderr=True, highlight=False)
    settings = dict(tasks=tasks, references=args.references, update=args.update, thresholds=thresholds(args),
                    cpu=args.cpu_profile)
    if stderr.is_terminal:
        with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                      console=stderr, transient=True) as progress:
            status = progress.add_task("starting", total=None)
            reps = reproduce_baselines(manifest, out, lambda m: progress.update(status, description=f"[dim]{m}[/]"),
                                       **settings)
    else:  # a log or CI: rich draws nothing there, so one line per step (minutes pass between them)
        reps = reproduce_baselines(manifest, out, lambda m: stderr.print(escape(m), soft_wrap=True), **settings)
    replaced = bool(args.report) and args.report.exists()  # said, not silent (issue 40)
    if args.report:
        from sharedtask.reproduce import report_sections
        from sharedtask.report import write_report

        write_report(args.report, report_sections(reps), title="sharedtask reproduce --all")
    bad = [r for r in reps if r.verdict in ("differs", "failed")]
    if args.json:
        print(json.dumps([{"task": r.task.id, "baseline": r.name, "verdict": r.verdict, "error": r.error,
                           "cpu_profile": (r.sandbox.record.get("cpu") or {}).get("profile") if r.sandbox else None,
                           "cpu_note": r.cpu_note,
                           "comparison": r.comparison.to_json() if r.comparison else None} for r in reps], indent=2))
    else:
        from sharedtask.sandbox.cpu import profile

        chosen = profile(args.cpu_profile)
        # task/baseline whole at any width ("arqmath-3-tas…" for three tasks at 80 columns before)
        table = KeyedTable([Column("task/baseline"), Column("verdict"), Column("mean KTU", "right", whole=True),
                            Column("mean RBO", "right", whole=True), Column("max RMSE", "right", whole=True)],
                           title=f"reproduction of {len(reps)} baseline run(s) against the reference runs "
                                 f"(CPU profile {chosen.name}: {chosen.description})", title_justify="left")
        for r in reps:
            c = r.comparison
            style = "red" if r in bad else "green"
            verdict = f"[{style}]{escape(r.verdict)}[/]" + (f": {escape(r.error)}" if r.error else "")
            rmse = max((m.rmse for m in c.measures), default=None) if c and not c.identical else None
            table.add_row(f"{escape(r.task.id)}/{escape(r.name)}", verdict,
                          *(("—" if v is None else f"{v:.4f}") for v in
                            ((c.mean_ktu if c and not c.identical else None),
                             (c.mean_rbo if c and not c.identical else None), rmse)))
        console.print(table)
        for r in reps:
            if r.comparison and r.comparison.verdict == "differs":
                console.print(f"{escape(r.task.id)}/{escape(r.name)}: {escape(r.comparison.verdict_line())}")
            if r.cpu_note:
                console.print(f"{escape(r.task.id)}/{escape(r.name)}: CPU: {escape(r.cpu_note)}")
        if args.report:
            console.print(f"report: {escape(str(args.report))}" + (" (replaced the earlier report there)"
                                                                    if replaced else ""))
        console.print(_tally(reps, args.update))
    return 1 if bad else 0


def _tally(reps: list, update: bool) -> str:
    """The closing line, e.g. "44 of 44 identical" or "40 of 44 identical, 3 reproduced, 1 failed"."""
    from collections import Counter

    counts = Counter(r.verdict for r in reps)
    head = "updated" if update else "identical"
    rest = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()) if v != head)
    return f"{counts.get(head, 0)} of {len(reps)} {head}" + (f", {rest}" if rest else "")
