"""Reader benchmark: throughput and peak memory of the streaming readers on full-size data.

Measures, each in a fresh subprocess (so peak RSS belongs to that reader alone):

* args.me JSON (``read_argsme_dir``) on a synthetic corpus with the real size profile
  (387,740 arguments: 338,620 / 21,197 / 14,353 / 13,522 / 48, docs/formats.md)
  and on a 10 % corpus, to show that memory is flat in corpus size;
* ARQMath Posts XML (``read_posts``) with 1M answers (+0.7M questions) and with 10 %;
* TREC runs/qrels: ``load_run_dict`` / ``read_run`` / ``load_qrels_dict`` on a large run,
  next to pytrec_eval's own evaluation time on the same data (for the evaluator's 1.5x budget).

Data is generated once under ``--data`` (default /work/bench-data, never in the repo)
by the minimal writers below; pass ``--argsme DIR`` / ``--posts FILE`` to measure other
data instead (e.g. the real corpus or ``sharedtask.samples.synthetic`` output).

    .venv/bin/python benchmarks/readers.py               # full size (generates ~1.4 GB + ~1.6 GB once)
    .venv/bin/python benchmarks/readers.py --quick       # 10 % sizes only
"""

from __future__ import annotations

import argparse
import html
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path

# docs/formats.md: args.me 2020-04-01 size profile
ARGSME_PROFILE = {"debateorg.json": 338_620, "debatepedia.json": 21_197, "debatewise.json": 14_353,
                  "idebate.json": 13_522, "parliamentary.json": 48}

_WORDS = ("the of and to a in is that it for as with was on be by this are not or have from but they "
          "which one you all were can there an their has been more would when will if no out so what up "
          "school teachers tenure government abortion death penalty freedom speech tax energy nuclear "
          "vaccine health public private students rights law economy should must evidence argument because "
          "therefore however moreover studies show people children society country world").split()


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choices(_WORDS, k=n))


def _hex8(rng: random.Random) -> str:
    return f"{rng.getrandbits(32):08x}"


# ---------------------------------------------------------------- minimal writers


def write_argsme(directory: Path, scale: float, seed: int = 1) -> None:
    """Five args.me files with the real argument counts x scale and ~2.6 KB per argument
    (1 GB for the full corpus, like the real one)."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    for name, count in ARGSME_PROFILE.items():
        n = max(1, round(count * scale))
        tmp = directory / (name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as out:
            out.write('{"arguments":[')
            for i in range(n):
                src = f"{_hex8(rng)}-2019-04-18T1{i % 10}:00:00Z"
                title = _text(rng, 6).capitalize()
                arg = {
                    "premises": [{"text": _text(rng, rng.randint(150, 550)), "stance": rng.choice(("PRO", "CON")),
                                  "annotations": []}],
                    "context": {
                        "sourceId": src, "previousArgumentInSourceId": "", "acquisitionTime": "2019-04-18T13:32:05Z",
                        "discussionTitle": title, "sourceTitle": f"Online Debate: {title} | Debate.org",
                        "sourceUrl": f"https://www.debate.org/debates/{title.replace(' ', '-')}/1/",
                        "nextArgumentInSourceId": f"{src}-0000{i % 9}-000",
                        "aspects": [{"name": w, "weight": 0.5, "normalizedWeight": 0.5, "rank": 1}
                                    for w in rng.sample(_WORDS, 2)],
                    },
                    "id": f"S{_hex8(rng)}-A{_hex8(rng)}",
                    "conclusion": _text(rng, rng.randint(3, 12)) + " \u00e9\u2013",
                }
                if i:
                    out.write(",")
                out.write(json.dumps(arg, ensure_ascii=False))
            out.write("]}")
        tmp.replace(directory / name)


def write_posts(path: Path, answers: int, seed: int = 2) -> None:
    """An ARQMath Posts XML file with ``answers`` answers and 0.7x as many questions."""
    rng = random.Random(seed)
    questions = max(1, int(answers * 0.7))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    formula = 0

    def body() -> str:
        nonlocal formula
        parts = []
        for _ in range(rng.randint(1, 3)):
            formula += 1
            parts.append(f"<p>{_text(rng, rng.randint(15, 60))} <span class=\"math-container\" id=\"{formula}\">"
                         f"$x_{{{formula % 97}}}^2 < \\frac{{a}}{{b}}$</span> {_text(rng, 10)}</p>")
        return "\n".join(parts)

    def attr(value: str) -> str:
        return html.escape(value, quote=True).replace("\n", "&#xA;")

    with open(tmp, "w", encoding="utf-8", buffering=1 << 20) as out:
        out.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        post_id = 0
        made = 0
        for q in range(questions):
            post_id += 1
            qid = post_id
            # spread the answers over the questions
            n_answers = answers * (q + 1) // questions - answers * q // questions
            out.write(f'  <row Id="{qid}" PostTypeId="1" CreationDate="2012-01-01T00:00:00.000" '
                      f'Score="{rng.randint(-3, 50)}" ViewCount="{rng.randint(1, 9999)}" Body="{attr(body())}" '
                      f'OwnerUserId="{rng.randint(1, 99999)}" Title="{attr(_text(rng, 8))}" '
                      f'Tags="&lt;algebra&gt;&lt;calculus&gt;" AnswerCount="{n_answers}" CommentCount="0" />\n')
            for _ in range(n_answers):
                post_id += 1
                made += 1
                out.write(f'  <row Id="{post_id}" PostTypeId="2" ParentId="{qid}" '
                          f'CreationDate="2012-01-02T00:00:00.000" Score="{rng.randint(-3, 50)}" '
                          f'Body="{attr(body())}" OwnerUserId="{rng.randint(1, 99999)}" CommentCount="0" />\n')
        out.write("</posts>\n")
    assert made == answers
    tmp.replace(path)


def write_run_and_qrels(run: Path, qrels: Path, topics: int, depth: int, seed: int = 3) -> None:
    rng = random.Random(seed)
    run.parent.mkdir(parents=True, exist_ok=True)
    with open(run, "w") as out, open(qrels, "w") as q:
        for t in range(1, topics + 1):
            for r in range(1, depth + 1):
                out.write(f"{t} Q0 S{_hex8(rng)}-A{t:04d}{r:04d} {r} {1000.0 / r:.6f} bench\n")
            for d in range(1, depth + 1, 10):
                q.write(f"{t} 0 S00000000-A{t:04d}{d:04d} {rng.choice((0, 1, 2, 3))}\n")


# ---------------------------------------------------------------- measurement (child side)


def _child(kind: str, target: str) -> None:
    """Run one reader over ``target`` and print a JSON line with counts, time and peak RSS."""
    import sharedtask.formats as F

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    c0 = time.process_time()
    n = 0
    extra: dict[str, float] = {}
    if kind == "argsme":
        for _ in F.read_argsme_dir(target):
            n += 1
    elif kind == "posts":
        for _ in F.read_posts(target):
            n += 1
    elif kind == "read_run":
        for _ in F.read_run(target, "trec"):
            n += 1
    elif kind == "load_run_dict":
        run = F.load_run_dict(target, "trec")
        n = sum(len(d) for d in run.values())
    elif kind == "naive_split_loop":
        # reference point: the simplest possible loader, no checks, no line numbers
        run = {}
        with open(target) as f:
            for line in f:
                parts = line.split()
                run.setdefault(parts[0], {})[parts[2]] = float(parts[4])
        n = sum(len(d) for d in run.values())
    elif kind == "pytrec_eval":
        import pytrec_eval

        run_path, qrels_path = target.split(",")
        t_load = time.process_time()
        run = F.load_run_dict(run_path, "trec")
        qrels = F.load_qrels_dict(qrels_path)
        extra["load_s"] = time.process_time() - t_load
        t_eval = time.process_time()
        pytrec_eval.RelevanceEvaluator(qrels, {"map", "ndcg", "P_10"}).evaluate(run)
        extra["eval_s"] = time.process_time() - t_eval
        n = sum(len(d) for d in run.values())
    else:
        raise SystemExit(f"unknown kind {kind}")
    seconds = time.perf_counter() - t0
    extra["cpu"] = time.process_time() - c0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"records": n, "seconds": seconds, "peak_kb": peak, "import_kb": rss_before, **extra}))


def measure(kind: str, target: str, size: int) -> dict[str, float]:
    out = subprocess.run([sys.executable, __file__, "--child", kind, target], check=True,
                         capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    result["bytes"] = size
    return result


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.iterdir()) if path.is_dir() else path.stat().st_size


# ---------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("/work/bench-data"))
    ap.add_argument("--argsme", type=Path, help="measure this args.me folder instead of the synthetic one")
    ap.add_argument("--posts", type=Path, help="measure this Posts XML file instead of the synthetic one")
    ap.add_argument("--answers", type=int, default=1_000_000, help="answers in the synthetic Posts file")
    ap.add_argument("--run-topics", type=int, default=2000, help="topics x 1000 = lines of the benchmark run")
    ap.add_argument("--quick", action="store_true", help="10 %% sizes only")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "TARGET"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _child(*args.child)
        return

    data: Path = args.data
    jobs: list[tuple[str, str, Path]] = []  # (label, kind, target)
    scales = [("10%", 0.1)] if args.quick else [("10%", 0.1), ("full", 1.0)]
    for label, scale in scales:
        if args.argsme and label == "full":
            target = args.argsme
        else:
            target = data / f"argsme-{label}"
            if not (target / "parliamentary.json").exists():
                print(f"generating {target} ...", file=sys.stderr, flush=True)
                write_argsme(target, scale)
        jobs.append((f"args.me {label}", "argsme", target))
    for label, scale in scales:
        if args.posts and label == "full":
            target = args.posts
        else:
            target = data / f"posts-{label}" / "Posts.xml"
            if not target.exists():
                print(f"generating {target} ...", file=sys.stderr, flush=True)
                write_posts(target, int(args.answers * scale))
        jobs.append((f"Posts.xml {label}", "posts", target))
    topics = args.run_topics // 10 if args.quick else args.run_topics
    run, qrels = data / f"run-{topics}" / "run.txt", data / f"run-{topics}" / "qrels.txt"
    if not qrels.exists():
        print(f"generating {run} ...", file=sys.stderr, flush=True)
        write_run_and_qrels(run, qrels, topics, 1000)
    jobs += [("run read_run", "read_run", run), ("run load_run_dict", "load_run_dict", run),
             ("run naive split loop", "naive_split_loop", run)]

    # Throughput is per CPU second: on a shared machine wall time mostly measures the neighbours.
    print(f"{'input':<22}{'MB':>7}{'records':>11}{'wall s':>8}{'CPU s':>7}{'MB/s':>7}{'records/s':>11}"
          f"{'peak RSS MB':>13}{'(import)':>10}")
    for label, kind, target in jobs:
        r = measure(kind, str(target), _size(target))
        mb = r["bytes"] / 1e6
        print(f"{label:<22}{mb:>7.0f}{r['records']:>11,}{r['seconds']:>8.1f}{r['cpu']:>7.1f}{mb / r['cpu']:>7.1f}"
              f"{r['records'] / r['cpu']:>11,.0f}{r['peak_kb'] / 1024:>13.0f}{r['import_kb'] / 1024:>10.0f}",
              flush=True)
    r = measure("pytrec_eval", f"{run},{qrels}", _size(run))
    print(f"\nrun of {r['records']:,} lines: load_run_dict+load_qrels_dict {r['load_s']:.1f} CPU s, "
          f"pytrec_eval evaluate (map, ndcg, P_10) {r['eval_s']:.1f} CPU s, "
          f"load/evaluate = {r['load_s'] / r['eval_s']:.2f}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
