"""Full-size synthetic corpora and runs for benchmarks (args.me, ARQMath, TREC runs).

Why: readers, validators, evaluators and indexers must be measured at the real scale
(1 GB args.me file, 1.4M ARQMath answers / 28M formulae, 10M-line runs), but the real
data cannot be shipped. These generators write the official formats
(docs/formats.md, the same builders as the bundled
samples in :mod:`sharedtask.samples`) with realistic sizes and a Zipf-like vocabulary,
so that throughput, memory and Lucene indexing behave as on the real data.

They stream: every record is written as soon as it is built, and memory stays flat
in the corpus size (the vocabulary and formula pools are fixed-size). Output is
deterministic for a given seed and scale.

CLI::

    python -m sharedtask.samples.synthetic argsme OUTDIR [--scale 1.0]
    python -m sharedtask.samples.synthetic arqmath OUTDIR --answers N
    python -m sharedtask.samples.synthetic run OUT --topics T --depth D [--interleaved] [--judged J]

``argsme`` and ``arqmath`` write ``OUTDIR/input`` (the ``$inputDataset`` layout) and
``OUTDIR/truth`` (qrels over sampled documents), like the bundled samples.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import math
import random
import sys
from array import array
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from sharedtask.samples.builders import (
    ARGSME_FILES,
    FORMULA_TSV_HEADER,
    Argument,
    argsme_record,
    html_escape,
    xml_attr,
    xml_text,
)

# reference: args.me 2020-04-01 has 387,740 arguments in these files.
ARGSME_PROFILE: dict[str, int] = {
    "debateorg.json": 338_620,
    "debatepedia.json": 21_197,
    "debatewise.json": 14_353,
    "idebate.json": 13_522,
    "parliamentary.json": 48,
}
# reference: ARQMath collection, about 1M questions, 1.4M answers, 28M formulae.
ARQMATH_QUESTIONS_PER_ANSWER = 1 / 1.4
ARQMATH_FORMULAE_PER_ANSWER = 28_000_000 / 1_400_000

_BATCH = 2000
_MASK32 = 0xFFFFFFFF

err = Console(stderr=True, highlight=False)


# ------------------------------------------------------------------------------- vocabulary

_FUNCTION_WORDS = (
    "the of and to a in is that it for as with be on not this are by or have from but they "
    "we an which their more people can would there if all will about when because should "
    "could one most other than many also some these those only very much such i you he she "
    "was were has had do does did no so what who them its our your my me us his her been"
).split()

_SYLLABLES = (
    "ba be bi bo bu ca ce ci co cu da de di do du fa fe fi fo ga ge gi go la le li lo lu ma me "
    "mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve "
    "vi vo za ze tion ment ness able ing er al ic ous ist ure ant ent ive ly"
).split()


def _pseudo_words(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct pronounceable words: function words first (the Zipf head), then made-up ones."""
    words = list(dict.fromkeys(_FUNCTION_WORDS))
    seen = set(words)
    while len(words) < n:
        w = "".join(rng.choice(_SYLLABLES) for _ in range(rng.choice((1, 2, 2, 3, 3, 3, 4))))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


@dataclass(frozen=True)
class Vocabulary:
    """Words with cumulative Zipf-Mandelbrot weights, for ``random.choices`` in bulk."""

    words: list[str]
    cum_weights: list[float]

    @classmethod
    def zipf(cls, rng: random.Random, size: int = 60_000, exponent: float = 1.05, sentence_end: float = 0.07) -> "Vocabulary":
        base = _pseudo_words(rng, size)
        weights = [1.0 / (rank + 2.7) ** exponent for rank in range(size)]
        # Sentence ends: a period attached to some tokens (Lucene analyzers strip it).
        head = min(size, 3000)
        words = base + [w + "." for w in base[:head]]
        factor = sentence_end / (1 - sentence_end) * sum(weights) / sum(weights[:head])
        weights += [w * factor for w in weights[:head]]
        return cls(words, list(itertools.accumulate(weights)))

    def draw(self, rng: random.Random, k: int) -> list[str]:
        return rng.choices(self.words, cum_weights=self.cum_weights, k=k)


def _lengths(rng: random.Random, n: int, mean: float, sigma: float, lo: int, hi: int) -> list[int]:
    """Log-normal lengths with the given mean (long tail like real posts)."""
    mu = math.log(mean) - sigma * sigma / 2
    return [max(lo, min(hi, int(rng.lognormvariate(mu, sigma)))) for _ in range(n)]


def _texts(rng: random.Random, vocab: Vocabulary, lengths: Sequence[int]) -> list[str]:
    """One text per length, drawing all words of the batch in one ``random.choices`` call."""
    words = vocab.draw(rng, sum(lengths))
    out: list[str] = []
    pos = 0
    for n in lengths:
        out.append(" ".join(words[pos:pos + n]))
        pos += n
    return out


def _mix32(i: int, salt: int) -> int:
    """A bijection on 32-bit ints (odd multiplier, xor): unique ids without a set in memory."""
    return ((i * 0x9E3779B1) ^ salt) & _MASK32


@contextmanager
def _progress(label: str, total: int) -> Iterator[tuple[Progress, int]]:
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=err, transient=False, disable=not err.is_terminal) as progress:
        yield progress, progress.add_task(label, total=total)


class _Reservoir:
    """A fixed-size uniform sample of a stream (for qrels over a corpus we do not keep)."""

    def __init__(self, rng: random.Random, size: int) -> None:
        self.rng, self.size, self.items, self.seen = rng, size, [], 0

    def offer(self, item: object) -> None:
        self.seen += 1
        if len(self.items) < self.size:
            self.items.append(item)
        else:
            j = self.rng.randrange(self.seen)
            if j < self.size:
                self.items[j] = item


# ------------------------------------------------------------------------------- args.me


def argsme_counts(scale: float) -> dict[str, int]:
    """Arguments per file at ``scale`` (1.0 = the real 387,740), at least one per file."""
    return {name: max(1, round(n * scale)) for name, n in ARGSME_PROFILE.items()}


def write_argsme(outdir: Path, scale: float = 1.0, seed: int = 0, topics: int = 50,
                 judged_per_topic: int = 40, mean_premise_chars: int = 1000) -> dict[str, int]:
    """Write an args.me-shaped corpus (5 files), ``topics.xml`` and qrels; returns argument counts."""
    rng = random.Random(seed)
    vocab = Vocabulary.zipf(rng)
    mean_words = mean_premise_chars / 6.0  # about 5 letters plus a space per token
    inp = outdir / "input"
    inp.mkdir(parents=True, exist_ok=True)
    counts = argsme_counts(scale)
    judged = _Reservoir(random.Random(seed + 1), topics * judged_per_topic)
    source_counter = 0
    arg_counter = 0
    with _progress("args.me arguments", sum(counts.values())) as (progress, task):
        for file_name in ARGSME_FILES:
            remaining = counts[file_name]
            with (inp / file_name).open("w", encoding="utf-8", newline="") as f:
                f.write('{"arguments":[')  # one line, like the 1 GB original file
                first = True
                debate: list[Argument] = []
                while remaining > 0:
                    batch = min(_BATCH, remaining)
                    remaining -= batch
                    lengths = _lengths(rng, batch, mean_words, 0.8, 1, 5000)
                    premises = _texts(rng, vocab, lengths)
                    for premise in premises:
                        if not debate or len(debate) >= rng.randint(2, 10):
                            if debate:
                                _flush_debate(f, debate, first)
                                first = False
                            source_counter += 1
                            source_id = f"{_mix32(source_counter, seed):08x}"
                            conclusion = " ".join(vocab.draw(rng, rng.randint(3, 10))).rstrip(".").capitalize()
                            acquisition = f"2019-04-{rng.randint(10, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
                        arg_counter += 1
                        arg = Argument(
                            id=f"S{source_id}-A{_mix32(arg_counter, seed ^ 0x5BD1E995):08x}",
                            conclusion=conclusion, premise=premise.capitalize() + ".",
                            stance="PRO" if rng.random() < 0.5 else "CON", file_name=file_name,
                            source_id=source_id, discussion=conclusion, number=source_counter,
                            acquisition=acquisition,
                            author="Mr. Speaker" if file_name == "parliamentary.json" else None,
                        )
                        if debate:
                            debate[-1].next_id, arg.previous_id = arg.id, debate[-1].id
                        debate.append(arg)
                        judged.offer(arg.id)
                    progress.advance(task, batch)
                _flush_debate(f, debate, first)
                f.write("]}")
    _write_touche_topics(inp / "topics.xml", rng, vocab, topics)
    _write_touche_qrels(outdir / "truth" / "qrels.txt", random.Random(seed + 2), judged.items, topics)
    return counts


def _flush_debate(f: IO[str], debate: list[Argument], first: bool) -> None:
    """Write a finished debate (its arguments are linked previous/next only once it is complete)."""
    if not debate:
        return
    parts = [json.dumps(argsme_record(a), ensure_ascii=False, separators=(",", ":")) for a in debate]
    f.write(("" if first else ",") + ",".join(parts))
    debate.clear()


def _write_touche_topics(path: Path, rng: random.Random, vocab: Vocabulary, n: int) -> None:
    """reference: Touché 2020 topics with description and narrative."""
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write("<topics>\n")
        for number in range(1, n + 1):
            title = "Should " + " ".join(vocab.draw(rng, rng.randint(3, 7))).replace(".", "") + "?"
            f.write(f"  <topic>\n    <number>{number}</number>\n    <title>{xml_text(title)}</title>\n")
            f.write(f"    <description>{xml_text(' '.join(vocab.draw(rng, 25)))}</description>\n")
            f.write(f"    <narrative>{xml_text(' '.join(vocab.draw(rng, 40)))}</narrative>\n  </topic>\n")
        f.write("</topics>\n")


def _write_qrels(path: Path, rng: random.Random, docs: list, topics: int,
                 line: Callable[[int, str, random.Random], str]) -> None:
    """Split the judged documents evenly over the topics; ``line(t, doc, rng)`` formats one row."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rng.shuffle(docs)
    per_topic = max(1, len(docs) // topics)
    with path.open("w", encoding="utf-8", newline="") as f:
        for t in range(topics):
            for doc in sorted(docs[t * per_topic:(t + 1) * per_topic]):
                f.write(line(t, doc, rng))


def _write_touche_qrels(path: Path, rng: random.Random, docs: list, topics: int) -> None:
    """reference: ``qid 0 docid rel``, space separated, 2020 scale {-2, 0..5}."""
    _write_qrels(path, rng, docs, topics,
                 lambda t, doc, r: f"{t + 1} 0 {doc} {r.choice((-2, 0, 0, 0, 1, 1, 2, 3, 4, 5))}\n")


# ------------------------------------------------------------------------------- ARQMath

_VARS = ("x", "y", "z", "n", "k", "m", "a", "b", "c", "t", "p", "q", "\\alpha", "\\beta", "\\lambda", "\\theta", "\\epsilon")
_FUNCS = ("\\sin", "\\cos", "\\log", "\\ln", "\\exp", "\\tan", "f", "g")
_OPS = ("+", "-", "\\cdot")
_RELS = ("=", "<", "\\leq", ">", "\\geq", "\\neq", "\\equiv", "\\approx")


def _expr(rng: random.Random, depth: int) -> str:
    """A random LaTeX expression; nested structures make most of them distinct."""
    if depth <= 0 or rng.random() < 0.25:
        r = rng.random()
        if r < 0.005:  # quotes in LaTeX make csv QUOTE_MINIMAL quote the cell (reference)
            return f'\\text{{"{rng.choice(_VARS[:12])}"}}'
        return rng.choice(_VARS) if r < 0.7 else str(rng.randint(0, 99))
    kind = rng.randrange(9)
    a, b = _expr(rng, depth - 1), _expr(rng, depth - 1)
    if kind == 0:
        return f"\\frac{{{a}}}{{{b}}}"
    if kind == 1:
        return f"{a}^{{{b}}}"
    if kind == 2:
        return f"\\sqrt{{{a}}}"
    if kind == 3:
        v = rng.choice(_VARS[:7])
        return f"\\sum_{{{v}=1}}^{{{b}}} {a}"
    if kind == 4:
        return f"\\int_{{0}}^{{{b}}} {a}\\,d{rng.choice(_VARS[:4])}"
    if kind == 5:
        return f"{rng.choice(_FUNCS)}({a})"
    if kind == 6:
        return f"{a}_{{{rng.choice(_VARS[:7])}}}"
    if kind == 7:
        return f"\\left({a}+{b}\\right)"
    return f"{a} {rng.choice(_OPS)} {b}"


def _formula_pool(rng: random.Random, size: int) -> list[str]:
    """``size`` distinct formulae; index + 1 is the visual id (identical LaTeX, one id)."""
    pool: dict[str, None] = {}
    while len(pool) < size:
        e = _expr(rng, rng.choice((1, 2, 2, 3, 3, 4)))
        if rng.random() < 0.5:
            e = f"{e} {rng.choice(_RELS)} {_expr(rng, 2)}"
        pool[e] = None
    return list(pool)


_SPAN_OPEN = xml_attr('<span class="math-container" id="')
_SPAN_MID = xml_attr('">')
_SPAN_CLOSE = xml_attr("</span>")
_P_OPEN, _P_CLOSE = xml_attr("<p>"), xml_attr("</p>")
_PAR_BREAK = xml_attr("\n\n")


@dataclass
class ArqmathCounts:
    questions: int
    answers: int
    formulae: int
    formula_files: int


class _FormulaIndex:
    """The formula index TSVs (v3), a new file every ``rows_per_file`` rows."""

    def __init__(self, folder: Path, rows_per_file: int) -> None:
        self.folder, self.rows_per_file = folder, rows_per_file
        self.files = 0
        self.rows_in_file = 0
        self.handle: IO[str] | None = None
        self.writer: Any = None

    def row(self, values: list[object]) -> None:
        if self.handle is None or self.rows_in_file >= self.rows_per_file:
            self.close()
            self.files += 1
            self.handle = (self.folder / f"{self.files}.tsv").open("w", encoding="utf-8", newline="")
            self.writer = csv.writer(self.handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
            self.writer.writerow(FORMULA_TSV_HEADER)
            self.rows_in_file = 0
        self.writer.writerow(values)
        self.rows_in_file += 1

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


class _ArqmathPosts:
    """The posts of the synthetic collection, one ``<row>`` at a time, with their formulae.

    One random stream drives everything, so the order of the draws below is part of the
    output: changing it changes every file (tests/test_synthetic.py pins the figures)."""

    def __init__(self, rng: random.Random, vocab: Vocabulary, pool: list[str], index: _FormulaIndex) -> None:
        self.rng, self.vocab, self.pool, self.index = rng, vocab, pool, index
        self.pool_attr = [xml_attr(html_escape(tex)) for tex in pool]
        self.pool_cum = list(itertools.accumulate(1.0 / (r + 1.5) for r in range(len(pool))))
        self.pool_index = range(len(pool))
        self.questions = array("q")
        self.formula_id = 0
        self.comment_id = 0

    def spans(self, post_id: int, thread_id: int, kind: str, k: int) -> list[str]:
        """Draw ``k`` formulae, write their index rows, return their escaped spans."""
        rng, pool = self.rng, self.pool
        out = []
        for idx in rng.choices(self.pool_index, cum_weights=self.pool_cum, k=k):
            self.formula_id += 1
            visual = idx + 1
            issue, old = "", visual
            r = rng.random()
            if r < 0.004:
                issue, old = "v", visual + len(pool)  # docs/formats.md: visual id reassigned
            elif r < 0.006:
                self.index.row([self.formula_id, post_id, thread_id, kind, "", visual, visual, "d", pool[idx]])  # gone from the post
                continue
            self.index.row([self.formula_id, post_id, thread_id, kind, "", old, visual, issue, pool[idx]])
            out.append(f"{_SPAN_OPEN}{self.formula_id}{_SPAN_MID}${self.pool_attr[idx]}${_SPAN_CLOSE}")
        return out

    def body(self, post_id: int, thread_id: int, kind: str, mean_formulae: float, words: list[str]) -> str:
        """Paragraphs of ``words`` with formula spans interleaved, escaped for an XML attribute."""
        k = min(60, int(self.rng.expovariate(1 / mean_formulae))) if mean_formulae else 0
        parts = self.spans(post_id, thread_id, kind, k)
        out: list[str] = [_P_OPEN]
        step = max(1, len(words) // (len(parts) + 1))
        for i, span in enumerate(parts):
            out.append(" ".join(words[i * step:(i + 1) * step]))
            out.append(" " + span + " ")
            if i % 4 == 3:
                out.append(_P_CLOSE + _PAR_BREAK + _P_OPEN)
        out.append(" ".join(words[len(parts) * step:]))
        out.append(_P_CLOSE + xml_attr("\n"))
        return "".join(out)

    def question(self, post_id: int, created: str, text: list[str]) -> str:
        rng = self.rng
        self.questions.append(post_id)
        title_words = " ".join(text[:rng.randint(4, 10)])
        title_spans = self.spans(post_id, post_id, "title", 1 if rng.random() < 0.6 else 0)
        title = title_words + (" " + title_spans[0] if title_spans else "")
        tags = "".join(f"&lt;{w}&gt;" for w in dict.fromkeys(self.vocab.draw(rng, rng.randint(1, 4))) if "." not in w) \
            or "&lt;calculus&gt;"
        return (f'  <row Id="{post_id}" PostTypeId="1" CreationDate="{created}" Score="{rng.randint(-2, 50)}" '
                f'ViewCount="{rng.randint(10, 20000)}" Body="{self.body(post_id, post_id, "question", 7.5, text)}" '
                f'OwnerUserId="{rng.randint(1, 500000)}" LastActivityDate="{created}" Title="{title}" '
                f'Tags="{tags}" AnswerCount="{rng.randint(0, 5)}" CommentCount="{rng.randint(0, 6)}" />\n')

    def answer(self, post_id: int, created: str, text: list[str]) -> str:
        rng = self.rng
        # answers go mostly to recent questions, like a live Q&A site
        parent = self.questions[max(0, len(self.questions) - 1 - int(rng.expovariate(1 / 200)))]
        line = (f'  <row Id="{post_id}" PostTypeId="2" ParentId="{parent}" CreationDate="{created}" '
                f'Score="{rng.randint(-2, 80)}" Body="{self.body(post_id, parent, "answer", 11.5, text)}" '
                f'OwnerUserId="{rng.randint(1, 500000)}" LastActivityDate="{created}" CommentCount="{rng.randint(0, 6)}" />\n')
        for _ in range(min(30, int(rng.expovariate(1 / 3.5)))):  # formulae in comments
            self.comment_id += 1
            self.formula_id += 1
            idx = rng.choices(self.pool_index, cum_weights=self.pool_cum)[0]
            self.index.row([self.formula_id, post_id, parent, "comment", self.comment_id, idx + 1, idx + 1, "", self.pool[idx]])
        return line


def write_arqmath(outdir: Path, answers: int, seed: int = 0, topics: int = 100, judged_per_topic: int = 50,
                  rows_per_tsv: int = 1_000_000, mean_body_words: int = 70) -> ArqmathCounts:
    """Write ``Posts.xml``, ``formulas/*.tsv`` (v3), ``topics.xml`` (A.x) and qrels.

    Questions = answers / 1.4 and about 20 formulae per answer (5 per question, 8 per
    answer in the posts, the rest in comments), the proportions of the real collection.
    """
    rng = random.Random(seed)
    vocab = Vocabulary.zipf(rng, size=30_000)
    n_questions = max(1, round(answers * ARQMATH_QUESTIONS_PER_ANSWER))
    pool = _formula_pool(rng, max(200, min(400_000, int(answers * ARQMATH_FORMULAE_PER_ANSWER) // 20)))
    inp = outdir / "input"
    (inp / "formulas").mkdir(parents=True, exist_ok=True)
    judged = _Reservoir(random.Random(seed + 1), topics * judged_per_topic)
    index = _FormulaIndex(inp / "formulas", rows_per_tsv)
    posts = _ArqmathPosts(rng, vocab, pool, index)
    remaining_q, remaining_a = n_questions, answers
    post_id = 0
    minute = 0
    with (inp / "Posts.xml").open("w", encoding="utf-8", newline="") as f, \
            _progress("ARQMath posts", n_questions + answers) as (progress, task):
        f.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        while remaining_q + remaining_a:
            batch = min(_BATCH, remaining_q + remaining_a)
            lengths = _lengths(rng, batch, mean_body_words, 0.7, 3, 2000)
            words = vocab.draw(rng, sum(lengths))
            pos = 0
            lines: list[str] = []
            for n in lengths:
                text = words[pos:pos + n]  # vocabulary words are [a-z.]: nothing to escape
                pos += n
                post_id += rng.randint(1, 3)
                minute += rng.randint(0, 3)
                created = f"{2010 + minute // 525_600}-{minute // 43_800 % 12 + 1:02d}-{minute // 1440 % 28 + 1:02d}T{minute // 60 % 24:02d}:{minute % 60:02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}"
                is_question = not posts.questions or rng.random() * (remaining_q + remaining_a) < remaining_q
                if is_question and remaining_q:
                    remaining_q -= 1
                    lines.append(posts.question(post_id, created, text))
                else:
                    remaining_a -= 1
                    lines.append(posts.answer(post_id, created, text))
                    judged.offer(post_id)
            f.writelines(lines)
            progress.advance(task, batch)
        f.write("</posts>\n")
    index.close()
    _write_arqmath_topics(inp / "topics.xml", rng, vocab, pool, topics)
    _write_arqmath_qrels(outdir / "truth" / "qrels.tsv", random.Random(seed + 2), judged.items, topics)
    return ArqmathCounts(n_questions, answers, posts.formula_id, index.files)


def _write_arqmath_topics(path: Path, rng: random.Random, vocab: Vocabulary, pool: list[str], n: int) -> None:
    """reference: <Topics><Topic number="A.x"><Title/><Question/><Tags/></Topic></Topics>, HTML-escaped."""
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<Topics>\n')
        for i in range(n):
            tex = rng.choice(pool)
            title = " ".join(vocab.draw(rng, 6)).replace(".", "")
            question = (f"<p>{html_escape(' '.join(vocab.draw(rng, 30)))} "
                        f'<span class="math-container" id="q_1">${html_escape(tex)}$</span></p>')
            f.write(f'  <Topic number="A.{301 + i}">\n    <Title>{xml_text(title)}</Title>\n'
                    f"    <Question>{xml_text(question)}</Question>\n    <Tags>calculus,algebra</Tags>\n  </Topic>\n")
        f.write("</Topics>\n")


def _write_arqmath_qrels(path: Path, rng: random.Random, docs: list, topics: int) -> None:
    """reference: 'topic 0 id rel', tab separated, CRLF, 0..3."""
    _write_qrels(path, rng, docs, topics,
                 lambda t, doc, r: f"A.{301 + t}\t0\t{doc}\t{r.choice((0, 0, 1, 1, 2, 3))}\r\n")


# ------------------------------------------------------------------------------- runs

RUN_FORMATS = ("trec", "arqmath-task1", "arqmath-task2")


def _doc_name(fmt: str, index: int) -> str:
    if fmt == "trec":  # args.me-style ids, unique per index (bijective mixing)
        return f"S{_mix32(index // 8 + 1, 0x1234567):08x}-A{_mix32(index + 1, 0x7654321):08x}"
    return str(index + 1)


def write_run(out: Path, topics: int, depth: int, *, interleaved: bool = False, fmt: str = "trec",
              corpus: int = 2_000_000, judged: int = 0, qrels: Path | None = None, seed: int = 0,
              tag: str = "synthetic") -> int:
    """A run with ``topics`` x ``depth`` lines (each topic's documents distinct, scores
    non-increasing with ties); with ``judged`` > 0 also qrels judging that many documents
    per topic (80 % of them retrieved, the rest not). Returns the number of lines."""
    if fmt not in RUN_FORMATS:
        raise ValueError(f"unknown run format {fmt!r}")
    if depth > corpus:
        raise ValueError("depth larger than the corpus")
    rng = random.Random(seed)
    # doc(topic, rank) = (stride * rank + offset[topic]) mod corpus: distinct per topic, no memory.
    stride = 7_919
    while math.gcd(stride, corpus) != 1:
        stride += 2
    offsets = [rng.randrange(corpus) for _ in range(topics)]
    scale = 15.0 / math.log(depth + 1)

    def topic_name(t: int) -> str:
        return str(t + 1) if fmt == "trec" else f"{'B' if fmt == 'arqmath-task2' else 'A'}.{t + 1}"

    def line(t: int, rank: int) -> str:
        index = (stride * rank + offsets[t]) % corpus
        # every 7th document ties with the one before it; 3 decimals add ties deep in the ranking
        score = f"{20.0 - scale * math.log(rank - (rank % 7 == 0)):.3f}"
        if fmt == "trec":
            return f"{t + 1} Q0 {_doc_name(fmt, index)} {rank} {score} {tag}\n"
        if fmt == "arqmath-task1":  # reference: Topic_Id Post_Id Rank Score Run_Tag
            return f"A.{t + 1}\t{index + 1}\t{rank}\t{score}\t{tag}\n"
        return f"B.{t + 1}\t{index + 1}\t{index // 12 + 1}\t{rank}\t{score}\t{tag}\n"

    order = ((t, r) for r in range(1, depth + 1) for t in range(topics)) if interleaved else \
            ((t, r) for t in range(topics) for r in range(1, depth + 1))
    total = topics * depth
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="") as f, _progress("run lines", total) as (progress, task):
        buf: list[str] = []
        for n, (t, r) in enumerate(order, start=1):
            buf.append(line(t, r))
            if len(buf) >= 50_000:
                f.writelines(buf)
                buf.clear()
                progress.update(task, completed=n)
        f.writelines(buf)
        progress.update(task, completed=total)
    if judged:
        qrels = qrels or out.with_name(out.name + ".qrels")
        sep, end = (" ", "\n") if fmt == "trec" else ("\t", "\r\n")
        grades = (0, 1, 2) if fmt == "trec" else (0, 1, 2, 3)
        with qrels.open("w", encoding="utf-8", newline="") as f:
            for t in range(topics):
                retrieved = rng.sample(range(1, depth + 1), min(depth, judged * 4 // 5))
                unretrieved = range(depth + 1, min(corpus, depth + 1 + judged - len(retrieved)))
                for rank in sorted(retrieved) + list(unretrieved):
                    index = (stride * rank + offsets[t]) % corpus
                    # better ranks are more often relevant, so that measures vary between runs
                    g = grades[min(len(grades) - 1, int(rng.random() * len(grades) * (1.2 - rank / (depth + 1))))]
                    doc = index + 1 if fmt == "arqmath-task1" else _doc_name(fmt, index) if fmt == "trec" else index + 1
                    f.write(f"{topic_name(t)}{sep}0{sep}{doc}{sep}{g}{end}")
    return total


# ------------------------------------------------------------------------------- CLI


def _size(path: Path) -> str:
    n = sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else path.stat().st_size
    return f"{n / 1e6:,.1f} MB"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharedtask.samples.synthetic", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="kind", required=True)
    a = sub.add_parser("argsme", help="args.me-shaped corpus (387,740 arguments at --scale 1)")
    a.add_argument("outdir", type=Path)
    a.add_argument("--scale", type=float, default=1.0)
    a.add_argument("--topics", type=int, default=50)
    a.add_argument("--seed", type=int, default=0)
    m = sub.add_parser("arqmath", help="ARQMath-shaped posts, formula index (v3), topics, qrels")
    m.add_argument("outdir", type=Path)
    m.add_argument("--answers", type=int, required=True, help="answers (real: 1.4M); questions = answers/1.4")
    m.add_argument("--topics", type=int, default=100)
    m.add_argument("--seed", type=int, default=0)
    r = sub.add_parser("run", help="a TREC/ARQMath run (+ matching qrels with --judged)")
    r.add_argument("out", type=Path)
    r.add_argument("--topics", type=int, required=True)
    r.add_argument("--depth", type=int, default=1000)
    r.add_argument("--interleaved", action="store_true", help="rank-major order: topics mixed, not grouped")
    r.add_argument("--format", choices=RUN_FORMATS, default="trec")
    r.add_argument("--corpus", type=int, default=2_000_000, help="number of distinct documents to draw from")
    r.add_argument("--judged", type=int, default=0, help="judged documents per topic: also write qrels")
    r.add_argument("--qrels", type=Path, default=None, help="qrels path (default: OUT.qrels)")
    r.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    import time

    start = time.perf_counter()
    if args.kind == "argsme":
        counts = write_argsme(args.outdir, scale=args.scale, seed=args.seed, topics=args.topics)
        print(f"args.me: {sum(counts.values()):,} arguments ({', '.join(f'{k} {v:,}' for k, v in counts.items())})")
        print(f"  {args.outdir / 'input'}  {_size(args.outdir / 'input')}")
    elif args.kind == "arqmath":
        c = write_arqmath(args.outdir, args.answers, seed=args.seed, topics=args.topics)
        print(f"ARQMath: {c.questions:,} questions, {c.answers:,} answers, {c.formulae:,} formulae in {c.formula_files} TSV files")
        print(f"  {args.outdir / 'input'}  {_size(args.outdir / 'input')}")
    else:
        n = write_run(args.out, args.topics, args.depth, interleaved=args.interleaved, fmt=args.format,
                      corpus=args.corpus, judged=args.judged, qrels=args.qrels, seed=args.seed)
        print(f"run: {n:,} lines  {args.out}  {_size(args.out)}")
        if args.judged:
            q = args.qrels or args.out.with_name(args.out.name + ".qrels")
            print(f"qrels: {q}  {_size(q)}")
    if args.kind in ("argsme", "arqmath"):
        print(f"  {args.outdir / 'truth'}")
    print(f"generated in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
