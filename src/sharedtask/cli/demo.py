"""``sharedtask demo``: baselines (and submissions) built, run sandboxed, validated, scored, ranked."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sharedtask.cli import LazyConsole, options
from sharedtask.errors import SharedTaskError
from sharedtask.folders import check_output_option
from sharedtask.untrusted import markup_safe

# The pipeline, Docker and rich's widgets are imported where used: --help needs none of them.
console = LazyConsole(highlight=False)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "demo",
        help="the whole flow: build, run sandboxed, validate, evaluate, leaderboard and HTML report",
        description=(
            "For each task (default: every task that has a baseline), build the images of the baselines "
            "(and of the submissions listed with --submissions) if missing, run each in the sandbox on the "
            "task's dataset (default: the bundled sample), validate the output, evaluate it against the "
            "truth, and print a leaderboard. Writes an HTML report and leaderboards (JSON, CSV) to --output."
        ),
    )
    parser.add_argument("--task", action="append", metavar="ID", help="task id (repeatable; default: all tasks with software)")
    parser.add_argument("--manifest", type=Path, metavar="FILE", help="manifest (default: the project's tira.yml)")
    parser.add_argument("--submissions", type=Path, action="append", metavar="FILE",
                        help="YAML list of submissions to rank with the baselines (same shape as tira.yml's baselines; repeatable)")
    parser.add_argument("--no-baselines", action="store_true", help="run only the submissions")
    parser.add_argument("--dataset", default="sample", metavar="NAME",
                        help="each task's dataset of this name, in the manifest or the registry (sharedtask data list), "
                             "e.g. test (default: sample)")
    options.add_output(parser, "where runs, records, leaderboards and the report go (default: ./sharedtask-demo)",
                       default=Path("sharedtask-demo"))
    parser.add_argument("--report", type=Path, metavar="FILE",
                        help="HTML report path (default: OUTPUT/report.html; when that holds a report of other "
                             "tasks it is kept and this one goes to OUTPUT/report-<task>.html)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild images even when up to date")
    parser.add_argument("--json", action="store_true", help="print the leaderboards as JSON at the end")
    parser.add_argument("--serve", action="store_true",
                        help="instead: start the submission service on loopback, submit every baseline (and "
                             "submission) as a team, publish the leaderboards and keep serving until Ctrl-C "
                             "(the organizer's sign-in link is printed)")
    parser.add_argument("--port", type=int, default=8000, help="port of the service with --serve (default: 8000)")
    edition = parser.add_argument_group("a new edition on the sample (docs/assessment.md)")
    edition.add_argument("--edition", action="store_true",
                         help="instead: pool the runs of --runs, let two simulated assessors judge the pool from "
                              "the sample's truth, measure their agreement, assemble and register the qrels, and "
                              "rank the runs by them (one --task, default arqmath-3-task1)")
    edition.add_argument("--runs", type=Path, action="append", metavar="PATH",
                         help="with --edition: run files or folders of them (repeatable; default: the checkout's "
                              "baselines/reference-runs/TASK)")
    edition.add_argument("--error-rate", type=float, default=0.15, metavar="P",
                         help="with --edition: share of grades each simulated assessor gets wrong (default 0.15)")
    edition.add_argument("--double", type=float, default=0.5, metavar="P",
                         help="with --edition: share of each topic's items judged twice (default 0.5)")
    edition.add_argument("--seed", type=int, default=1, help="with --edition: seed of the simulation (default 1)")
    where = parser.add_argument_group("where the runs happen (docs/distributed.md)")
    where.add_argument("--parallel", type=int, default=1, metavar="N",
                       help="without --broker: N sandboxed runs at a time on this machine (default: 1)")
    options.add_broker(where, "send the runs to `sharedtask worker` processes through this Celery broker")
    options.add_image_shipping(where)
    options.renamed_option(where, "--registry", "--images-registry")
    where.add_argument("--kubernetes", type=Path, metavar="DIR",
                       help="run nothing: write a restricted Namespace and one Kubernetes Job + NetworkPolicy per "
                            "run to DIR (rendered from the sandbox policy, images by digest: needs --images-registry; "
                            "not yet tried on a cluster)")
    where.add_argument("--resume", action="store_true",
                       help="keep the runs already finished in --output for the same job (always on with --broker)")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.edition:
        return _edition(args)
    from dataclasses import replace

    from sharedtask.executor import executor_for
    from sharedtask.executor.stages import stage_source_for
    from sharedtask.pipeline import build_images, run_tasks, sections, with_parents
    from sharedtask.manifest import load_manifest
    from sharedtask.report import write_report
    from sharedtask.spec import all_tasks, load_task

    manifest = load_manifest(args.manifest, extra=args.submissions)
    if args.no_baselines:
        manifest = replace(manifest, baselines=())
    tasks = [load_task(t) for t in args.task] if args.task else [t for t in all_tasks() if manifest.for_task(t.id)]
    if not tasks:
        raise SharedTaskError("no task has any software to run", hint="check the manifest's baselines/submissions")
    for task in tasks:
        if not manifest.for_task(task.id):
            raise SharedTaskError(f"no baseline or submission serves {task.id}")
    for task in tasks:  # the user's own mistakes first, then the machine's
        manifest.dataset(task, args.dataset)
    check_output_option(args.output)
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from sharedtask.images.client import docker_client

    if args.parallel < 1:
        raise SharedTaskError(f"--parallel must be at least 1, not {args.parallel}")
    options.check_broker(args)
    if args.kubernetes and args.broker:
        raise SharedTaskError("--kubernetes renders manifests instead of running: drop --broker")
    docker_client()  # one clear line when Docker is not there, before any work
    out = args.output.resolve()
    out.mkdir(parents=True, exist_ok=True)

    softwares = {sw.name: sw for t in tasks for sw in manifest.for_task(t.id)}
    to_build = with_parents(list(softwares.values()), manifest)
    total = sum(len(manifest.for_task(t.id)) for t in tasks)
    console.print(f"[bold]sharedtask demo[/]: {len(tasks)} task(s), {len(softwares)} piece(s) of software, "
                  f"{total} sandboxed run(s) → {out}")
    outcomes = []
    with Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console.real, transient=False) as progress:
        status = progress.add_task("starting", total=None)

        def say(message: str) -> None:
            progress.update(status, description=f"[dim]{markup_safe(message, 160)}[/]")

        builds = progress.add_task("building images", total=len(to_build))
        build_errors: dict[str, str | None] = {}
        for sw in to_build:
            build_errors.update(build_images([sw], say, force=args.rebuild))
            progress.update(builds, completed=len(build_errors))
        for image, error in build_errors.items():
            if error:
                progress.console.print(f"[bold red]build failed[/] {markup_safe(image)}: {markup_safe(error, 2000, keep_newlines=True)}")
        if args.serve:
            return _serve(tasks, manifest, out, args, progress, say)
        if args.kubernetes:
            return _render_kubernetes(args, tasks, manifest, out, build_errors)
        runs = progress.add_task("sandboxed runs", total=total)
        finished: set[tuple[str, str]] = set()

        def on_state(run, state: str, worker: str | None) -> None:
            where = f" on {markup_safe(worker)}" if worker else ""
            colour = {"done": "green", "failed": "red", "refused": "red", "running": "cyan"}.get(state, "dim")
            progress.console.print(f"  {markup_safe(run.task.id)}/{markup_safe(run.software.name)}: "
                                   f"[{colour}]{state}[/]{where}")
            if state in ("done", "failed", "refused"):
                finished.add((run.task.id, run.software.name))
                progress.advance(runs)

        def on_task(outcome) -> None:
            outcomes.append(outcome)
            progress.console.print(_task_table(outcome))
            agreement = outcome.leaderboard.agreement_table() if outcome.leaderboard is not None else None
            if agreement is not None:
                progress.console.print(agreement)

        executor = executor_for(args.broker, parallel=args.parallel, queue=args.queue)
        image_source = _image_source(args) if args.broker else None
        # re-rankers' first stages travel beside the image archives; without them re-rankers run here
        stage_source = stage_source_for(args.images_dir, args.images_url) if args.broker else None
        try:
            run_tasks(tasks, manifest, out, say, dataset_name=args.dataset, build_errors=build_errors,
                      executor=executor, on_state=on_state, resume=args.resume or bool(args.broker),
                      image_source=image_source, on_task=on_task, stage_source=stage_source)
        except KeyboardInterrupt:  # every run stops (a pool's too); what finished stays for --resume
            executor.close(interrupted=True)
            progress.update(status, description="interrupted", total=1, completed=0)
            progress.stop()
            console.print(_resume_line(len(finished), total, out, bool(args.broker)), soft_wrap=True)
            return 130
        executor.close()
        progress.update(status, description="done", total=1, completed=1)

    target, said = report_path(args.report, out, [t.id for t in tasks])
    report = write_report(target, sections(outcomes), title="sharedtask demo")
    if args.json:
        print(json.dumps({o.task.id: o.leaderboard.to_json() if o.leaderboard else None for o in outcomes}, indent=2))
    failed = [(o.task.id, e.name, e.status) for o in outcomes for e in o.entries if e.status != "success" or e.valid is False]
    console.print(f"\n[bold]report[/]: {markup_safe(str(report), None)}{markup_safe(said, None)}\n[bold]runs, records, leaderboards[/]: {out}")
    if failed:
        console.print(f"[bold red]{len(failed)} run(s) failed or were invalid[/]: "
                      + markup_safe(", ".join(f"{t}/{n} ({s})" for t, n, s in failed), None))
        return 1
    return 0


def report_path(given: Path | None, out: Path, task_ids: list[str]) -> tuple[Path, str]:
    """Where the report goes and a note saying what became of an earlier one (never silent).

    Why: ``demo --task X`` wrote OUT/report.html over the twelve-task report that setup.sh
    made (field test). A report of other tasks is now kept, and the new one goes beside it.
    """
    from sharedtask.report.html import report_tasks

    if given is not None:
        return given, " (replaced the earlier report there)" if given.exists() else ""
    target = out / "report.html"
    if not target.exists():
        return target, ""
    earlier = report_tasks(target)
    if earlier is not None and sorted(earlier) == sorted(task_ids):
        return target, " (replaced the earlier report of the same task(s))"
    name = "-".join(task_ids) if len(task_ids) <= 3 else f"{len(task_ids)}-tasks-{_digest(task_ids)}"
    beside = out / f"report-{name}.html"
    what = f"of {len(earlier)} task(s)" if earlier is not None else "of other tasks"
    return beside, f" (the earlier report {what}, {target}, is kept" + \
        ("; replaced the earlier report of the same task(s))" if beside.exists() else ")")


def _digest(ids: list[str]) -> str:
    import hashlib

    return hashlib.sha256(" ".join(sorted(ids)).encode()).hexdigest()[:8]


def _resume_line(finished: int, total: int, out: Path, broker: bool) -> str:
    """One line after Ctrl-C: what was kept, and how to go on."""
    rest = total - finished
    kept = f"{finished} of {total} run(s) finished and are kept in {markup_safe(str(out))}"
    if broker:
        return (f"[bold red]interrupted[/]: {kept}; the {rest} sent to workers go on there, and the same "
                "command collects them (--resume is always on with --broker)")
    return f"[bold red]interrupted[/]: {kept}; the same command with --resume runs the other {rest}"


def _serve(tasks: list, manifest, out: Path, args: argparse.Namespace, progress: Progress, say) -> int:
    """``--serve``: the loop through the submission service (sharedtask.service.demo)."""
    from sharedtask.service.demo import serve_demo

    def shout(message: str) -> None:
        if message.startswith(("organizer page", "service on")):
            progress.console.print(f"[bold]{markup_safe(message, None)}[/]", soft_wrap=True)
        say(message)

    result = serve_demo(tasks, manifest, out, args.port, shout, dataset=args.dataset)
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


def _render_kubernetes(args: argparse.Namespace, tasks, manifest, out: Path, build_errors) -> int:
    """Write the manifests of every run; the images are referenced by registry digest when --images-registry is given."""
    from sharedtask.executor.kubernetes import claim_name, image_reference, write_manifests, write_namespace
    from sharedtask.pipeline import plan

    source = _image_source(args)
    console.print(f"namespace (restricted Pod Security): {markup_safe(str(write_namespace(args.kubernetes)))}")
    written, claims = 0, {}
    for task in tasks:
        for run in plan(task, manifest, out, dataset_name=args.dataset, build_errors=build_errors,
                        image_source=source):
            if run.job is None:
                console.print(f"[red]{markup_safe(run.software.name)}[/]: {markup_safe(run.error or '', 300)}")
                continue
            path = write_manifests(run.job, args.kubernetes, image=image_reference(run.job),
                                   input_claim=claim_name(run.job.dataset.id, claims))
            console.print(f"{markup_safe(task.id)}/{markup_safe(run.software.name)}: {markup_safe(str(path))}")
            written += 1
    console.print(f"[bold]{written} Kubernetes Job(s)[/] in {args.kubernetes} (nothing ran; "
                  "each needs a PersistentVolumeClaim named after its dataset holding input/)")
    return 0


def _image_source(args: argparse.Namespace):
    """How workers get an image they lack: an archive (--images-dir/--images-url) or a registry."""
    from sharedtask.images import shipping as images
    from sharedtask.images.client import docker_client

    return images.source_for(docker_client(), registry=args.images_registry, images_dir=args.images_dir,
                             images_url=args.images_url)


def _task_table(outcome):
    """Leaderboard of one task: the evaluator's table plus a row for each run that produced no
    scores, saying why (a KeyedTable: the run name whole at any width)."""
    from sharedtask.tables import Column, KeyedTable

    if outcome.leaderboard is not None:
        table = outcome.leaderboard.table()
    else:
        table = KeyedTable([Column("#", "right", whole=True), Column("run"), Column("status")], key=1)
    table.title = f"{outcome.task.id}: {outcome.task.title} ({outcome.dataset.name} dataset)"
    table.title_justify = "left"
    scored = set(outcome.results)
    for entry in outcome.entries:
        if entry.name not in scored:
            reason = entry.status if entry.status != "success" else ("invalid run" if entry.valid is False else "not scored")
            if entry.status == "error" and entry.notes:  # nothing ran: say why (missing image, failed build)
                reason += f": {entry.notes[0]}"
            table.add_note("", markup_safe(entry.name), note=f"[red]{markup_safe(reason, 300)}[/]")
    return table


def _edition(args: argparse.Namespace) -> int:
    """``demo --edition``: sharedtask.edition.demo on one task's sample."""
    from sharedtask.cli import escape
    from sharedtask.edition.demo import run_edition_demo, runs_from
    from sharedtask.spec import load_task
    from sharedtask.tables import Column, KeyedTable

    if args.task and len(args.task) > 1:
        raise SharedTaskError("--edition runs one task at a time: give one --task")
    task = load_task(args.task[0] if args.task else "arqmath-3-task1")
    paths = args.runs
    if not paths:
        default = Path("baselines") / "reference-runs" / task.id
        if not default.is_dir():
            raise SharedTaskError(f"no runs given and no {default} here",
                                  hint="give --runs DIR (run files of the task), or run from a checkout")
        paths = [default]
    result = run_edition_demo(task, runs_from(paths), args.output, error_rate=args.error_rate, double=args.double,
                              seed=args.seed, say=lambda m: console.print(escape(m)))
    table = KeyedTable([Column("run"), Column("new qrels", "right", whole=True), Column("sample truth", "right", whole=True)],
                       title=f"{task.id}: {result.measure}", title_justify="left")
    for name, old, new in result.board:
        table.add_row(escape(name), "-" if new is None else f"{new:.4f}", "-" if old is None else f"{old:.4f}")
    console.print(table)
    if args.json:
        print(json.dumps({"task": task.id, "dataset": result.dataset, "agreement": result.agreement,
                          "pool": result.pool.counts(), "judged": result.judgments, "kendall_tau": result.tau,
                          "board": [{"run": n, "new_qrels": new, "sample_truth": old} for n, old, new in result.board]},
                         indent=2))
    return 0
