"""Structure-aware formula search with Approach Zero through pya0's C extension.

pya0 0.3.7 (PyPI, manylinux x86_64) is the engine of the strongest ARQMath formula
runs. Its wheel is tagged py3-none, and its C extension ``_pya0`` loads and runs
under the base image's Python 3.13 (checked: index + search of a few formulae);
the package's ``__init__`` imports pandas and nltk for its evaluation helpers, which
a search needs not, so ``_pya0`` is imported directly from the installed package
folder. Documents mark math as ``[imath]...[/imath]`` (Approach Zero's markup);
document numbers are 1-based in insertion order.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import sys
from pathlib import Path
from types import ModuleType

from formula_baseline.collection import Formula

log = logging.getLogger("baseline")

MAINTAIN_EVERY = 5000


def load() -> ModuleType:
    """The ``_pya0`` extension module (ImportError when pya0 is not installed)."""
    spec = importlib.util.find_spec("pya0")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pya0 is not installed")
    folder = list(spec.submodule_search_locations)[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)
    import _pya0  # type: ignore[import-not-found]

    return _pya0


def build(a0: ModuleType, formulas: list[Formula], index_dir: Path) -> None:
    index = a0.index_open(str(index_dir), option="w")
    writer = a0.index_writer(index)
    for n, formula in enumerate(formulas, 1):
        a0.writer_add_doc(writer, content=f"[imath]{formula.latex}[/imath]", url=str(n))
        if n % MAINTAIN_EVERY == 0:
            a0.writer_maintain(writer, force=False)
            log.info("indexed %d formulae", n)
    a0.writer_maintain(writer, force=True)
    a0.writer_flush(writer)
    a0.writer_close(writer)
    a0.index_close(index)


def search(a0: ModuleType, index_dir: Path, queries: list[tuple[str, str]], formulas: list[Formula],
           hits: int) -> dict[str, list[tuple[Formula, float]]]:
    """Per topic, ``(formula, score)`` sorted by score descending, ties by formula id."""
    index = a0.index_open(str(index_dir), option="r")
    out: dict[str, list[tuple[Formula, float]]] = {}
    try:
        for topic, latex in queries:
            reply = json.loads(a0.search(index, [{"str": latex, "type": "tex"}], topk=hits))
            found = []
            for hit in reply.get("hits", []):
                docid = int(hit["docid"])
                if 1 <= docid <= len(formulas):
                    found.append((formulas[docid - 1], float(hit["score"])))
            if reply.get("ret_code") not in (0, 2):  # 2 = "No hit found"
                log.info("topic %s: Approach Zero says %s", topic, reply.get("ret_str"))
            found.sort(key=lambda fs: (-fs[1], _id_key(fs[0].formula_id)))
            out[topic] = untie(found[:hits])
            log.info("topic %s: %d hits", topic, len(out[topic]))
    finally:
        a0.index_close(index)
    return out


def untie(ranked: list[tuple[Formula, float]]) -> list[tuple[Formula, float]]:
    """Make scores strictly follow the rank order, as Anserini's ScoreTiesAdjusterReranker does.

    Evaluation tools re-sort by score and break ties their own way (trec_eval: docno
    descending, docs/evaluation.md); rounding to 1e-4 and taking 1e-6 off per
    tied position keeps our order, and therefore our score, the same everywhere.
    """
    out: list[tuple[Formula, float]] = []
    previous, dup = None, 0
    for formula, score in ranked:
        rounded = round(score, 4)
        dup = dup + 1 if previous is not None and previous == rounded else 0
        previous = rounded
        out.append((formula, round(rounded - dup * 1e-6, 6)))
    return out


def _id_key(formula_id: str) -> tuple[int, str]:
    return (int(formula_id), "") if formula_id.isdigit() else (1 << 62, formula_id)
