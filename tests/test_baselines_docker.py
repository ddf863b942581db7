"""The baseline images, built and run in the sandbox on every task family's sample.

Each case runs the image twice through ``sharedtask.sandbox.run`` (no network,
read-only input, the task's limits), then checks that the run validates, that the
two run files are byte-identical, and that the run beats a random ranking of the
same collection (drawn with a fixed seed) on the task's primary measure.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from sharedtask.evaluate.api import evaluate
from sharedtask.formats.argsme import read_argsme_dir
from sharedtask.formats.arqmath import Answer, read_arqmath_topics, read_posts
from sharedtask.formats.formulas import read_formula_index
from sharedtask.formats.html import html_to_text
from sharedtask.formats.jsonl import read_queries, read_statements
from sharedtask.formats.mathqa import read_problems
from sharedtask.formats.touche import read_touche_topics
from sharedtask.formats.trec import RunRow, write_run
from sharedtask.sandbox.api import run as sandbox_run
from sharedtask.spec import load_task
from sharedtask.validate import validate

pytestmark = [pytest.mark.docker, pytest.mark.slow]

LUCENE = "sharedtask/baseline-lucene:latest"
FORMULA = "sharedtask/baseline-formula:latest"
QA = "sharedtask/baseline-extractive-qa:latest"
DENSE = "sharedtask/baseline-dense:latest"
MATHQA = "sharedtask/baseline-mathqa-search:latest"
SEED = 20240601


@pytest.fixture(scope="session")
def baseline_images(docker_client, base_image, repo_root: Path) -> dict[str, str]:
    """Build the three images once per session (layer cache makes rebuilds fast)."""
    builds = [
        (LUCENE, "lucene", {"BASE_IMAGE": base_image}),
        (FORMULA, "formula", {"LUCENE_IMAGE": LUCENE}),
        (QA, "extractive-qa", {"LUCENE_IMAGE": LUCENE}),
        (DENSE, "dense", {"LUCENE_IMAGE": LUCENE}),
        (MATHQA, "mathqa-search", {"BASE_IMAGE": base_image}),
    ]
    for tag, folder, args in builds:
        docker_client.images.build(path=str(repo_root / "baselines" / folder), tag=tag,
                                   buildargs=args, rm=True)
    return {"lucene": LUCENE, "formula": FORMULA, "qa": QA, "dense": DENSE, "mathqa": MATHQA}


@dataclass(frozen=True)
class Case:
    task: str
    image: str
    command: str

    @property
    def id(self) -> str:
        return f"{self.task}:{self.command.split()[2]}{'-' + self.command.split()[-1] if '--' in self.command else ''}"


CASES = [
    Case("touche-2020-task1", "lucene", "python -m lucene_baseline --model bm25"),
    Case("touche-2021-task1", "lucene", "python -m lucene_baseline --model qld --mu 1000"),
    Case("arqmath-3-task1", "lucene", "python -m lucene_baseline --model bm25"),
    Case("arqmath-3-task1", "lucene", "python -m lucene_baseline --model qld --mu 2000"),
    Case("arqmath-3-task2", "formula", "python -m formula_baseline --engine approach0"),
    Case("arqmath-3-task2", "formula", "python -m formula_baseline --engine lucene"),
    Case("arqmath-3-task3", "qa", "python -m extractive_qa"),
    Case("mathlib4-search", "dense", "python -m dense_baseline --mode dense"),
    Case("mathlib4-search", "dense", "python -m dense_baseline --mode bm25"),
    Case("mathlib4-search", "dense", "python -m dense_baseline --mode hybrid"),
    Case("touche-2021-task1", "dense", "python -m dense_baseline --mode dense"),
    Case("arqmath-3-task1", "dense", "python -m dense_baseline --mode hybrid"),
    Case("mathqa-test", "mathqa", "python -m mathqa_search"),
]


# ---------------------------------------------------------------- random runs


def _random_run(task, input_dir: Path, path: Path) -> None:
    """A random ranking of the whole sample collection (fixed seed), in the task's layout."""
    rng = random.Random(SEED)
    family = task.family
    if family == "mathqa":  # a random operation on the first two numbers of each problem
        problems = read_problems(input_dir / "problems.jsonl")
        path.write_text("".join(f"{rng.choice(('add', 'subtract', 'multiply', 'divide'))}(n0,n1)|\n"
                                for _ in problems), encoding="utf-8")
        return
    if family == "touche":
        docs = sorted(a.id for a in read_argsme_dir(input_dir))
        topics = [t.number for t in read_touche_topics(input_dir / "topics.xml")]
    elif family == "semantic-search":
        docs = sorted(s.id for s in read_statements(input_dir / "corpus.jsonl"))
        topics = [q.number for q in read_queries(input_dir / "queries.jsonl")]
        family = "touche"  # the same TREC layout, ranked the same random way
    else:
        topics = [t.number for t in read_arqmath_topics(input_dir / "topics.xml")]
    rows: list[RunRow] = []
    if family in ("touche", "arqmath-task1"):
        if family == "arqmath-task1":
            docs = sorted(p.id for p in read_posts(input_dir / "Posts.xml") if isinstance(p, Answer))
        for topic in topics:
            ranked = rng.sample(docs, min(1000, len(docs)))
            rows += [RunRow(topic, d, r, float(1000 - r), "random", 0) for r, d in enumerate(ranked, 1)]
        layout = "trec" if family == "touche" else "arqmath-task1"
    elif family == "arqmath-task2":
        instances = sorted({(f.id, f.post_id) for f in read_formula_index(input_dir / "formulas")
                            if f.type != "comment"})
        for topic in topics:
            ranked = rng.sample(instances, min(1000, len(instances)))
            rows += [RunRow(topic, fid, r, float(1000 - r), "random", 0, post_id=pid)
                     for r, (fid, pid) in enumerate(ranked, 1)]
        layout = "arqmath-task2"
    else:
        answers = sorted((p.id, p.body) for p in read_posts(input_dir / "Posts.xml") if isinstance(p, Answer))
        for topic in topics:
            aid, body = rng.choice(answers)
            text = " ".join(html_to_text(body).split())[:1000].rsplit(" ", 1)[0].replace("$", "")
            rows.append(RunRow(topic, "", 1, 1.0, "random", 0, sources=aid, answer=text))
        layout = "arqmath-task3"
    write_run(path, rows, layout)


def _primary(task, run: Path, truth: Path, input_dir: Path) -> float:
    result = evaluate(run, task, truth_dir=truth, input_dir=input_dir)
    return result.scores[result.primary.key]


# ---------------------------------------------------------------- the test


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_baseline_runs_validates_beats_random_and_is_reproducible(
        case: Case, baseline_images: dict[str, str], tmp_path: Path) -> None:
    task = load_task(case.task)
    input_dir, truth = task.sample_dir / "input", task.sample_dir / "truth"
    runs = []
    for attempt in (1, 2):
        outcome = sandbox_run(task, baseline_images[case.image], command=case.command,
                              input_dir=input_dir, output_dir=tmp_path / f"out{attempt}",
                              record_dir=tmp_path / f"record{attempt}", network=None)
        assert outcome.result.ok, (outcome.result.status, outcome.result.message, outcome.result.log_tail)
        assert outcome.request.policy.network is None  # --network none
        run_file = tmp_path / f"out{attempt}" / "run.txt"
        assert run_file.is_file()
        assert sorted(p.name for p in run_file.parent.iterdir()) == ["run.txt"]  # no scratch left
        runs.append(run_file)

    verdict = validate(runs[0], task, input_dir=input_dir)
    assert verdict.valid, [f for f in verdict.findings]
    assert runs[0].read_bytes() == runs[1].read_bytes()

    random_run = tmp_path / "random.txt"
    _random_run(task, input_dir, random_run)
    ours = _primary(task, runs[0], truth, input_dir)
    chance = _primary(task, random_run, truth, input_dir)
    assert ours > chance, f"{case.id}: baseline {ours:.4f} <= random {chance:.4f}"


_POOLING_CHECK = r"""
import json, sys
import numpy as np
from dense_baseline import encode
texts = json.loads(open("/check/texts.json", encoding="utf-8").read())
model = encode.load()
ours = encode.embed(model, texts)
theirs = np.asarray(model.embed(texts, norm=True, batch_size=4), dtype=np.float32)  # padded pooling, small batches
theirs[~np.isfinite(theirs).all(axis=1)] = 0.0
print(json.dumps({"shape": list(ours.shape), "maxdiff": float(np.abs(ours - theirs).max()),
                  "norms": [float(x) for x in np.linalg.norm(ours, axis=1)]}))
"""


def test_dense_pooling_equals_wordllamas_own_embedding(baseline_images: dict[str, str], docker_client,
                                                       tmp_path: Path) -> None:
    """The baseline pools token vectors without padding (encode.embed); WordLlama pads each
    batch. Both must give the same unit vectors, to float32 rounding, across batch and
    chunk boundaries: texts of very different lengths, an empty text, non-ASCII text, and
    one text longer than a gather chunk (CHUNK_TOKENS = 65,536 tokens)."""
    import json

    texts = ["", "a prime number", "Is the square root of 2 irrational?", "Überprüfung: ∑ x² ≥ 0 — ja."]
    texts += [" ".join(f"word{i} argument{i % 7}" for i in range(n)) for n in (5, 50, 500)]
    texts += ["the quick brown fox " * 20_000]  # about 80,000 tokens: spans two gather chunks
    texts += [f"topic {i}: should school uniforms be required" for i in range(130)]  # > one WordLlama batch
    (tmp_path / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    tmp_path.chmod(0o755)
    (tmp_path / "texts.json").chmod(0o644)
    output = docker_client.containers.run(
        baseline_images["dense"], ["python", "-c", _POOLING_CHECK], network_mode="none", remove=True,
        volumes={str(tmp_path): {"bind": "/check", "mode": "ro"}}, stdout=True, stderr=False)
    report = json.loads(output.decode().strip().splitlines()[-1])
    assert report["shape"] == [len(texts), 256]
    assert report["maxdiff"] < 1e-3, report["maxdiff"]
    assert report["norms"][0] == 0.0  # the empty text is the zero vector
    assert all(abs(n - 1.0) < 1e-5 for n in report["norms"][1:])


# CPU profiles (sharedtask.sandbox.cpu): what the libraries inside the image really see

# numpy's dispatch targets in use (what np.show_runtime() calls "found"): the kernels it will run
_PROBE = ("python -c \"import json, numpy._core._multiarray_umath as m; "
          "print(json.dumps(sorted(d for d in m.__cpu_dispatch__ if m.__cpu_features__.get(d))))\" "
          "> $outputDir/numpy.json; java -XX:+PrintFlagsFinal -version 2>/dev/null | grep -w UseAVX "
          "> $outputDir/jvm.txt; echo 'q0 Q0 d0 1 1.0 probe' > $outputDir/run.txt")


@pytest.mark.parametrize("cpu", ["native", "haswell", "nehalem"])
def test_a_cpu_profile_hides_vector_units_from_numpy_and_the_jvm(baseline_images, tmp_path: Path, cpu: str) -> None:
    import json

    from sharedtask.sandbox.cpu import host_cpu

    out = sandbox_run("mathlib4-search", baseline_images["dense"], command=_PROBE, output_dir=tmp_path / "out",
                      cpu=cpu, validate=False)
    assert out.result.status == "success", out.result.message
    numpy_features = set(json.loads((tmp_path / "out" / "numpy.json").read_text()))
    use_avx = int((tmp_path / "out" / "jvm.txt").read_text().split("=")[1].split()[0])
    host = host_cpu()[1]
    assert out.record["cpu"]["profile"] == cpu and out.record["cpu"]["simd"] == list(host)
    if cpu == "native":
        assert ("X86_V4" in numpy_features) == ("avx512f" in host and "avx512bw" in host)
        assert use_avx >= (2 if "avx2" in host else 0)
    elif cpu == "haswell":
        assert "X86_V4" not in numpy_features and use_avx <= 2
        assert ("X86_V3" in numpy_features) == ("avx2" in host and "fma" in host)
    else:
        assert not {"X86_V3", "X86_V4"} & numpy_features and use_avx == 0
    if cpu != "native":
        assert not [f for f in out.record["cpu"]["seen_by_image"] if f.startswith("avx512")]
