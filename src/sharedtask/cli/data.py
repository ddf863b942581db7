"""``sharedtask data``: the official datasets, named and verified.

    sharedtask data list [--json]
    sharedtask data show ID [--json]
    sharedtask data fetch ID [--mirror URL]
    sharedtask data import ID --from PATH
    sharedtask data build ID --from CHECKOUT
    sharedtask data verify ID [--json]
    sharedtask data path ID [--input | --truth]

ID is a registry id (``arqmath-3-task1/test``) or ``irds:<ir_datasets id>``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from typing import TYPE_CHECKING

from sharedtask.cli import escape, options
from sharedtask.errors import SharedTaskError

if TYPE_CHECKING:
    from rich.console import Console


ID_HELP = "dataset id (`sharedtask data list`), e.g. arqmath-3-task1/test, or irds:<ir_datasets id>"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("data", help="official datasets: list, show, fetch, import, verify, path",
                              description="Named official datasets (tasks/datasets/*.yml): ARQMath topics and qrels "
                                          "ship with sharedtask, Touché comes through ir_datasets (irds:ID), corpora "
                                          "are fetched from their official URLs or imported from a local copy. Files "
                                          "live under $SHAREDTASK_DATA (default ~/.cache/sharedtask/data).")
    sub = p.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    ls = sub.add_parser("list", help="every dataset with its task and state")
    ls.add_argument("--json", action="store_true", help="JSON on stdout")
    ls.set_defaults(func=_list)
    show = sub.add_parser("show", help="a dataset's files: source, size, checksum, role, state")
    show.add_argument("id", help=ID_HELP)
    show.add_argument("--json", action="store_true", help="JSON on stdout")
    show.set_defaults(func=_show)
    fetch = sub.add_parser("fetch", help="download what has a URL (resumes, checks, moves into place)")
    fetch.add_argument("id", help=ID_HELP)
    fetch.add_argument("--mirror", metavar="URL", help="base URL serving the files under their official names")
    fetch.set_defaults(func=_fetch)
    imp = sub.add_parser("import", help="copy files from a local copy of the official release")
    imp.add_argument("id", help=ID_HELP)
    imp.add_argument("--from", dest="source", type=Path, required=True, metavar="PATH",
                     help="a folder of the release (or one file)")
    imp.set_defaults(func=_import)
    bld = sub.add_parser("build", help="derive a dataset's files from your checkout of its source (mathlib4)",
                         description="Read the checkout (e.g. git clone https://github.com/leanprover-community/mathlib4 "
                                     "&& git -C mathlib4 checkout COMMIT, the commit `data show ID` names) and write "
                                     "the dataset's files, checked against the registry's sha256. No text of the "
                                     "source ships with sharedtask: it is read from your copy.")
    bld.add_argument("id", help="a dataset whose files are built, e.g. mathlib4-search/known-item")
    bld.add_argument("--from", dest="source", type=Path, required=True, metavar="CHECKOUT",
                     help="the top folder of the checkout")
    bld.add_argument("--json", action="store_true", help="counts and sha256 as JSON on stdout")
    bld.set_defaults(func=_build)
    ver = sub.add_parser("verify", help="re-hash every placed file against the registry and the manifest")
    ver.add_argument("id", help=ID_HELP)
    ver.add_argument("--json", action="store_true", help="JSON on stdout")
    ver.set_defaults(func=_verify)
    path = sub.add_parser("path", help="print the assembled dataset folder (input/ = $inputDataset, truth/)")
    path.add_argument("id", help=ID_HELP)
    which = path.add_mutually_exclusive_group()
    which.add_argument("--input", action="store_true", help="print the input folder (must be complete)")
    which.add_argument("--truth", action="store_true", help="print the truth folder (must be complete)")
    path.set_defaults(func=_path)
    lay = sub.add_parser("ir-layout", help="write TIRA's ir_datasets layout (documents.jsonl.gz, queries.jsonl, "
                                           "queries.xml) of a dataset folder from its native files")
    lay.add_argument("folder", type=Path, metavar="DIR", help="a dataset's input folder (what $inputDataset is)")
    lay.add_argument("--task", required=True, help="the task whose input contract declares the layout")
    options.add_output(lay, "write here instead of into DIR")
    lay.add_argument("--json", action="store_true", help="the counts as JSON on stdout")
    lay.set_defaults(func=_ir_layout)


def _console() -> Console:
    from rich.console import Console  # imported on use: a --json call need not pay for rich

    return Console(highlight=False, soft_wrap=True)


def _size(n: int | None) -> str:
    from sharedtask.units import format_size  # one style of sizes everywhere (binary units)

    return "" if n is None else format_size(n)


def _state(ds) -> str:
    from sharedtask.data import store

    states = store.status(ds)
    if all(s.present for s in states if s.file.required):
        return "complete"
    return "missing " + ", ".join(s.file.target for s in states if not s.ok)


def _list(args: argparse.Namespace) -> int:
    from sharedtask.data import all_datasets, store

    rows = []
    for ds in all_datasets().values():
        have = [s for s in store.status(ds) if s.present]
        rows.append({"id": ds.id, "task": ds.task, "official": ds.official, "irds": ds.irds, "title": ds.title,
                     "files": len(ds.files), "placed": len(have), "judged_topics": ds.judged_topics})
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    from sharedtask.tables import Column, KeyedTable

    table = KeyedTable([Column("id"), Column("task", whole=True), Column("title"), Column("placed", whole=True)],
                       title="datasets (sharedtask data show ID)")
    for r in rows:
        table.add_row(r["id"] + (f"\n[dim]irds:{r['irds']}[/]" if r["irds"] else ""), r["task"], escape(r["title"]),
                      f"{r['placed']}/{r['files']}")
    _console().print(table)
    return 0


def _show(args: argparse.Namespace) -> int:
    from sharedtask.data import get_dataset, store

    ds = get_dataset(args.id)
    states = store.status(ds)
    files = [{"path": s.file.target, "format": s.file.format, "required": s.file.required,
              "source": s.file.describe_source(), "size": s.file.size, "sha256": s.file.sha256, "md5": s.file.md5,
              "placed": s.present} for s in states]
    if args.json:
        print(json.dumps({"id": ds.id, "task": ds.task, "title": ds.title, "official": ds.official, "irds": ds.irds,
                          "judged_topics": ds.judged_topics, "folder": str(store.dataset_dir(ds)), "files": files},
                         indent=2, ensure_ascii=False))
        return 0
    console = _console()
    console.print(f"[bold]{escape(ds.id)}[/]: {escape(ds.title)} (task {ds.task}"
                  + (f", irds:{ds.irds}" if ds.irds else "") + ")", soft_wrap=False)
    from sharedtask.tables import Column, KeyedTable

    # the file name whole at any width ("input/topi…" at 80 columns before)
    table = KeyedTable([Column("file"), Column("format", whole=True), Column("source"),
                        Column("size", "right", whole=True), Column("checksum", whole=True), Column("placed")])
    for f in files:
        digest = f"sha256 {f['sha256'][:16]}…" if f["sha256"] else (f"md5 {f['md5']}" if f["md5"] else "")
        placed = "yes" if f["placed"] else ("no" if f["required"] else "no (optional)")
        table.add_row(f["path"], f["format"], escape(f["source"]), _size(f["size"]), digest, placed)
    console.print(table)
    console.print(f"folder: {escape(str(store.dataset_dir(ds)))}")
    return 0


def _report_missing(ds, still: list) -> int:
    if not still:
        return 0
    from rich.console import Console

    console = Console(stderr=True, highlight=False, soft_wrap=True)
    for f in still:
        console.print(f"missing: {escape(f.target)}: {escape(f.describe_source().replace('ID', ds.id))}")
    return 1


def _fetch(args: argparse.Namespace) -> int:
    from sharedtask.data import get_dataset, store

    ds = get_dataset(args.id)
    if args.mirror is not None:
        from urllib.parse import urlsplit

        parts = urlsplit(args.mirror)
        if not (parts.scheme == "file" or (parts.scheme in ("http", "https") and parts.netloc)):
            raise SharedTaskError(f"--mirror {args.mirror!r} is not a URL", hint="e.g. --mirror https://host/path/")
    still = store.assemble(ds, download=True, mirror=args.mirror)
    _console().print(f"{ds.id}: {len(ds.files) - len(still)} of {len(ds.files)} file entries in place "
                     f"({escape(str(store.dataset_dir(ds)))})")
    return _report_missing(ds, still)


def _import(args: argparse.Namespace) -> int:
    from sharedtask.data import get_dataset, store

    ds = get_dataset(args.id)
    done = store.import_from(ds, args.source)
    _console().print(f"{ds.id}: imported {len(done)} file(s): {escape(', '.join(done[:5]))}"
                     + (" …" if len(done) > 5 else ""))
    return _report_missing(ds, store.missing(ds))


def _build(args: argparse.Namespace) -> int:
    import time

    from sharedtask.data import get_dataset, store

    ds = get_dataset(args.id)
    started = time.perf_counter()
    done, result = store.build_from(ds, args.source, show_progress=not args.json)
    seconds = time.perf_counter() - started
    refusals = dict(sorted(result.refusal_counts().items()))
    if args.json:
        print(json.dumps({"id": ds.id, "commit": ds.checkout.commit if ds.checkout else None, "files": result.files,
                          "bytes": result.bytes, "statements": result.statements,
                          "with_docstring": result.with_docstring, "queries": result.queries,
                          "refusals": refusals, "seconds": round(seconds, 2), "sha256": result.digests}, indent=2))
        return 0
    console = _console()
    console.print(f"{ds.id}: read {result.files:,} files ({result.bytes:,} bytes) in {seconds:.1f} s: "
                  f"{result.statements:,} statements ({result.with_docstring:,} with a docstring), "
                  f"{result.queries:,} known-item queries")
    for reason, count in refusals.items():
        console.print(f"  refused {count:,}: {escape(reason)}")
    for target in done:
        console.print(f"[green]ok[/]  {escape(target)}: sha256 {result.digests[target]}")
    console.print(f"folder: {escape(str(store.dataset_dir(ds)))}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from sharedtask.data import get_dataset, store

    ds = get_dataset(args.id)
    checks = store.verify(ds, show_progress=not args.json)
    bad = [c for c in checks if not c.ok]
    if args.json:
        print(json.dumps({"id": ds.id, "ok": not bad,
                          "files": [{"path": c.target, "ok": c.ok, "detail": c.detail} for c in checks]}, indent=2))
    else:
        console = _console()
        for c in checks:
            console.print(f"{'[green]ok[/]' if c.ok else '[red]FAILED[/]'}  {escape(c.target)}: {escape(c.detail)}")
        console.print(f"{ds.id}: {'verified' if not bad else f'{len(bad)} problem(s)'}")
    return 1 if bad else 0


def _path(args: argparse.Namespace) -> int:
    from sharedtask.data import get_dataset, placing_hint, store

    ds = get_dataset(args.id)
    roles = ("input",) if args.input else ("truth",) if args.truth else ("input", "truth")
    still = store.assemble(ds, roles=roles, show_progress=False)
    if still:
        names = ", ".join(f.target for f in still)
        raise SharedTaskError(f"{ds.id} is not complete: {names} missing", hint=placing_hint(ds, still))
    folder = store.dataset_dir(ds)
    print(folder / roles[0] if len(roles) == 1 else folder)
    return 0


def _ir_layout(args: argparse.Namespace) -> int:
    from sharedtask.data.irlayout import write_ir_layout
    from sharedtask.spec import load_task

    if not args.folder.is_dir():
        raise SharedTaskError(f"{args.folder} is not a folder", hint="give a dataset's input folder")
    summary = write_ir_layout(load_task(args.task), args.folder, args.output)
    if args.json:
        print(json.dumps(summary.to_json()))
    else:
        _console().print(f"wrote TIRA's layout to {escape(str(summary.folder))}: {summary.documents} documents, "
                         f"{summary.queries} queries (documents.jsonl.gz, queries.jsonl, queries.xml)")
    return 0
