"""The measure registry: one declaration per measure (what it computes, on which input, how
topics are averaged, which official script or paper it follows).

Task specs name measures by ``id``; a spec naming an unregistered measure, or one that
does not fit the task's family, is refused when the spec loads (``sharedtask.spec``).
Like ir_measures' ``register``, adding a measure is one declaration here:

- a **trec_eval measure** (``trec_eval=`` its pytrec_eval name, ``relevance_level=``
  trec_eval's ``-l``) is computed by trec_eval itself through pytrec_eval, on the
  ARQMath prime run or on a plain TREC run, depending on ``input``;
- any other measure names its **procedure** (``compute=`` "module:function"), called
  with the family's prepared input (docs/evaluation.md lists them).

Which inputs a task family provides is the family's declaration (``sharedtask.families``).

This module imports nothing heavy: the spec loader consults it on every load.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any, Callable

#: What a measure scores. ``prime``: the ARQMath prime run (Tasks 1 and 2); ``task3``: one
#: answer per topic (ARQMath-3 Task 3); ``trec-run``: a plain TREC run (Touché);
#: ``exam-passages``: a ranking run's top-k passages with their text and exam questions.
INPUTS = ("prime", "task3", "trec-run", "programs", "exam-passages")

#: How topics are averaged, by name (printed with every result).
AVERAGING: dict[str, str] = {
    "arqmath-prime": ("trec_eval 9.0.8 without -c on the prime run (official ARQMath scripts): mean over the "
                      "qrels topics with at least one judged result in the run; other topics drop out"),
    "touche-official": ("clef21/evaluate.py: mean over the topics with at least one judged document in the run's "
                        "top 5 (and a positive judgment); other topics drop out"),
    "trec_eval": "trec_eval 9.0.8 without -c: mean over the run's topics that are in the qrels",
    "task3-official-manual": ("evaluate_task3_results_manual.py: mean over the topics the run answered with a "
                              "judged answer; unanswered topics and unjudged answers drop out"),
    "task3-all-topics": "mean over all qrels topics; a topic without an answer, or with an unjudged answer, counts 0",
    "exam": "mean over the topics with exam questions; a topic the run does not answer scores 0 (macro average)",
    "exam-cover-workbench": ("rubric-grading-workbench exam_cover_metric.py: mean over the topics with exam questions "
                             "where the run ranks a graded passage at rank <= 20; topics it does not rank drop out"),
    "exam-cover-all-topics": ("our averaging: mean over all topics with exam questions; a topic the run does not "
                              "rank scores 0"),
    "exam-qrels": ("trec_eval 9.0.8 without -c on the prime run against the EXAM qrels: mean over the topics with "
                   "exam questions that have a graded passage in the run"),
    "n-exam": "mean over the topics with exam questions whose best known relevant answer answers at least one",
    "mathqa-published": ("the MathQA suite's notebook: mean over the problems not on its broken list; an unanswered "
                         "or unevaluable program counts 0"),
    "mathqa-all": "mean over all problems of the truth file; an unanswered or unevaluable program counts as a guess",
    "task3-official-automatic": ("evaluate_task3_results_automatic.py: mean over the topics the run answered that "
                                 "have at least one known relevant (H+M) answer; unanswered topics drop out"),
}


@dataclass(frozen=True)
class Measure:
    id: str
    input: str
    averaging: str
    source: str  # the official script, paper or tool whose procedure this follows
    description: str
    trec_eval: str | None = None  # pytrec_eval measure name, when trec_eval computes it
    relevance_level: int = 1  # trec_eval -l
    compute: str | None = None  # "module:function" for procedures of our own
    gains: bool = False  # graded: reads the grades through the truth file's gain table, when it has one

    def procedure(self) -> Callable[..., dict[str, float]]:
        """The function computing per-topic values (imported on first use)."""
        if self.compute is None:
            raise ValueError(f"measure {self.id} is computed by trec_eval ({self.trec_eval}), not by a procedure")
        module, _, name = self.compute.partition(":")
        return getattr(import_module(module), name)

    def describe(self) -> dict[str, Any]:
        return {"id": self.id, "description": self.description, "source": self.source,
                "averaging": AVERAGING[self.averaging]}


REGISTRY: dict[str, Measure] = {}


def register(measure: Measure) -> Measure:
    """Declare a measure (once per id)."""
    if measure.id in REGISTRY:
        raise ValueError(f"measure {measure.id!r} is registered twice")
    if measure.input not in INPUTS:
        raise ValueError(f"measure {measure.id!r}: input must be one of {', '.join(INPUTS)}")
    if measure.averaging not in AVERAGING:
        raise ValueError(f"measure {measure.id!r}: unknown averaging {measure.averaging!r}")
    if (measure.trec_eval is None) == (measure.compute is None):
        raise ValueError(f"measure {measure.id!r}: give exactly one of trec_eval= and compute=")
    REGISTRY[measure.id] = measure
    return measure


def get(measure_id: str) -> Measure:
    try:
        return REGISTRY[measure_id]
    except KeyError:
        raise KeyError(f"unknown measure {measure_id!r}; registered: {', '.join(sorted(REGISTRY))}") from None


def for_inputs(inputs: tuple[str, ...]) -> list[str]:
    """The measure ids that score one of ``inputs`` (a family's, ``sharedtask.families``)."""
    return sorted(m.id for m in REGISTRY.values() if m.input in inputs)


_ARQ = ("ARQMath organizers' scripts arqmath_to_prim_task1.py / de_duplicate_2021.py + trec_eval 9.0.8 "
        "(as mirrored in approach0/pya0 eval-arqmath*/)")
_ARQ3 = "ARQMath-3 evaluate_task3_results_{manual,automatic}.py (approach0/pya0 eval-arqmath3/task3, ARQMathCode)"
_TOUCHE = "Touché organizers' clef21/evaluate.py (touche-webis-de/touche-code 82329a4)"
_LEANSEARCH = ("LeanSearch benchmark (Gao et al., A Semantic Search Engine for Mathlib4, EMNLP Findings 2024): "
               "graded exact / partial / irrelevant, gains 1 / 0.3 / 0; trec_eval 9.0.8 via pytrec_eval")

# --- ARQMath Tasks 1 and 2: trec_eval on the prime run --------------------------------------
register(Measure("ndcg_prime", "prime", "arqmath-prime", _ARQ, "nDCG′: trec_eval ndcg (graded gains 0-3) on the "
                 "prime run (first line per post kept, unjudged removed)", trec_eval="ndcg"))
register(Measure("map_prime", "prime", "arqmath-prime", _ARQ, "MAP′: trec_eval map -l2 (H+M relevant) on the prime run",
                 trec_eval="map", relevance_level=2))
register(Measure("p10_prime", "prime", "arqmath-prime", _ARQ, "P′@10: trec_eval P_10 -l2 on the prime run",
                 trec_eval="P_10", relevance_level=2))
register(Measure("bpref_prime", "prime", "arqmath-prime", _ARQ, "bpref′: trec_eval bpref -l2 on the prime run "
                 "(secondary)", trec_eval="bpref", relevance_level=2))

# --- ARQMath-3 Task 3 ----------------------------------------------------------------------
register(Measure("ar", "task3", "task3-official-manual", _ARQ3,
                 "AR: the grade of the topic's single answer (5 system failure, 6 do not know -> 0)",
                 compute="sharedtask.evaluate.task3:ar"))
register(Measure("p1", "task3", "task3-official-manual", _ARQ3, "P@1: the single answer is H or M (grade >= 2)",
                 compute="sharedtask.evaluate.task3:p1"))
register(Measure("ar_all_topics", "task3", "task3-all-topics", _ARQ3 + "; our averaging",
                 "AR over all judged topics: a topic without an answer or with an unjudged answer counts 0 "
                 "(a lower bound; not the official averaging)", compute="sharedtask.evaluate.task3:ar_all_topics"))
register(Measure("p1_all_topics", "task3", "task3-all-topics", _ARQ3 + "; our averaging",
                 "P@1 over all judged topics, missing and unjudged answers counting 0 (not the official averaging)",
                 compute="sharedtask.evaluate.task3:p1_all_topics"))
register(Measure("lexical_overlap", "task3", "task3-official-automatic", _ARQ3,
                 "LO: the best token-set F1 between the answer and each known relevant (H+M) answer, after the "
                 "organizers' math normalisation; RoBERTa pre-tokens stand in for the MathBERTa tokenizer "
                 "(docs/evaluation.md)", compute="sharedtask.evaluate.task3:lexical_overlap"))

_EXAM = ("EXAM, Sander and Dietz, DESIRES 2021; offline grader: the answer key stated in the text (exact, "
         "normalised, numeric; sharedtask.answers.exam)")
register(Measure("exam", "task3", "exam", _EXAM, "EXAM: the share of the topic's exam questions the answer answers",
                 compute="sharedtask.evaluate.exam:exam"))
register(Measure("n_exam", "task3", "n-exam", _EXAM, "n-EXAM: EXAM over the EXAM of the best known relevant answer "
                 "(the gold text)", compute="sharedtask.evaluate.exam:n_exam"))

_EXAM_RUBRIC = ("EXAM Cover and EXAM qrels: rubric-grading-workbench (Farzi and Dietz, ICTIR 2024), "
                "exam_cover_metric.py (TREMA-UNH/rubric-grading-workbench 156f9e2) and exam_to_qrels; grader as for "
                "EXAM (sharedtask.evaluate.exam_cover)")
register(Measure("exam_cover", "exam-passages", "exam-cover-workbench", _EXAM_RUBRIC,
                 "EXAM Cover as the workbench computes it: the share of the topic's exam questions answered by the "
                 "run's passages at rank (column) <= 20", compute="sharedtask.evaluate.exam_cover:exam_cover"))
register(Measure("exam_cover_all_topics", "exam-passages", "exam-cover-all-topics", _EXAM_RUBRIC + "; our variant",
                 "EXAM Cover over all topics (our variant): questions answered by the run's first 20 posts in "
                 "trec_eval's order; a topic the run does not rank counts 0",
                 compute="sharedtask.evaluate.exam_cover:exam_cover_all_topics"))
register(Measure("ndcg_exam_qrels", "exam-passages", "exam-qrels", _EXAM_RUBRIC,
                 "nDCG′ on EXAM qrels: each graded passage (the run's top 20 and the official pool) judged by the "
                 "number of exam questions it answers", compute="sharedtask.evaluate.exam_cover:ndcg_exam_qrels"))

# --- Touché Task 1 -------------------------------------------------------------------------
register(Measure("ndcg5_official", "trec-run", "touche-official", _TOUCHE,
                 "nDCG@5 as the organizers compute it: run sorted by rank (ties keep file order: the script's "
                 "unstable sort is not reproducible), top 5, repeated documents counted every time, unjudged "
                 "dropped, -2 -> 0", compute="sharedtask.evaluate.touche:ndcg5_official"))
register(Measure("ndcg_cut_5", "trec-run", "trec_eval", "trec_eval 9.0.8 ndcg_cut.5 via pytrec_eval",
                 "trec_eval ndcg_cut.5: score-sorted, unjudged = 0, grades below 0 read as 0", trec_eval="ndcg_cut_5"))

# --- Semantic search (LeanSearch's mathlib4 benchmark) ------------------------------------
# nDCG with the task's own gains: trec_eval on the grades mapped through the truth file's
# gain table, scaled to whole numbers (sharedtask.evaluate.trec.integer_gains).
register(Measure("ndcg_cut_20", "trec-run", "trec_eval", _LEANSEARCH,
                 "nDCG@20: trec_eval ndcg_cut.20 with the task's gain per grade (score-sorted, unjudged = 0)",
                 trec_eval="ndcg_cut_20", gains=True))
register(Measure("p10_partial", "trec-run", "trec_eval", _LEANSEARCH,
                 "P@10: trec_eval P_10 with partial and exact matches relevant (grade >= 1)", trec_eval="P_10"))
register(Measure("recall10_partial", "trec-run", "trec_eval", _LEANSEARCH,
                 "R@10: trec_eval recall_10 with partial and exact matches relevant (grade >= 1)",
                 trec_eval="recall_10"))

# --- MathQA (programs) -----------------------------------------------------------------------
_MATHQA = ("MathQA evaluation suite (ongzexuan/mathqa-evaluation): evaluate_test_correctness.ipynb (published check) "
           "and evaluate.py (option matching), with our safe calculator (sharedtask.answers)")
register(Measure("mathqa_published", "programs", "mathqa-published", _MATHQA,
                 "accuracy as the suite publishes it: the program's value within 0.5 of the gold option's value "
                 "(a value or gold option of 0 counts wrong, as in the notebook); broken problems left out",
                 compute="sharedtask.evaluate.mathqa:published"))
register(Measure("mathqa_options", "programs", "mathqa-all", _MATHQA + "; our scoring rules",
                 "option matching (delta 1) after the suite's evaluate.py, whose score_default stops as published "
                 "(NameError: sol, line 49) and adds k, not 1/k, for k candidates (line 71): 1 for the gold option "
                 "as the only candidate, 1/k among k candidates (ours), 1/5 for a guess (no value; ours), else 0",
                 compute="sharedtask.evaluate.mathqa:option_score"))
