"""Deterministic generator of the bundled sample datasets (``tasks/samples/<name>/``).

Why: every command, test and demo needs small data in the *official* formats on which
retrieval is meaningful (relevant documents share vocabulary and formulae with their
topic, so BM25 beats random), with the awkward cases real data has: unjudged
documents, exact duplicates (tied scores), topics with few relevant documents, a
topic without judgments, escaped HTML, quoted TSV fields, CRLF qrels.

Every format detail follows ``/work/shared/reference/tasks-and-formats.md`` (cited as
"reference" below). The generator uses seeded ``random.Random`` instances only and
writes bytes explicitly, so ``python -m sharedtask.samples`` reproduces the checked-in
files byte for byte (tested in ``tests/test_samples.py``).

Layout of each sample: ``input/`` is exactly what TIRA mounts as ``$inputDataset``;
``truth/`` holds what the evaluator needs and participants never see.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import re
import shutil
import sys
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Iterable, Iterator, Sequence

SAMPLE_NAMES: tuple[str, ...] = (
    "touche-2020",
    "touche-2021",
    "arqmath-task1",
    "arqmath-task2",
    "arqmath-task3",
)

# reference: the five args.me 2020-04-01 source files.
ARGSME_FILES: tuple[str, ...] = (
    "debateorg.json",
    "debatepedia.json",
    "debatewise.json",
    "idebate.json",
    "parliamentary.json",
)

# reference: formula index v3 header.
FORMULA_TSV_HEADER: tuple[str, ...] = (
    "id", "post_id", "thread_id", "type", "comment_id",
    "old_visual_id", "visual_id", "issue", "formula",
)

ANSWERS_TSV_HEADER: tuple[str, ...] = ("answer_id", "topic", "text")

# --------------------------------------------------------------------------------------
# Escaping and small format builders (shared with sharedtask.synthetic)
# --------------------------------------------------------------------------------------

_ATTR_ESCAPES = str.maketrans({
    "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
    "\n": "&#xA;", "\r": "&#xD;", "\t": "&#x9;",
})
_TEXT_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


def xml_attr(value: str) -> str:
    """Escape an XML attribute value the way Stack Exchange dumps do (newlines as ``&#xA;``)."""
    return value.translate(_ATTR_ESCAPES)


def xml_text(value: str) -> str:
    """Escape XML element text (``&``, ``<``, ``>``)."""
    return value.translate(_TEXT_ESCAPES)


def html_escape(value: str) -> str:
    """Escape text placed inside HTML (LaTeX such as ``|r|<1`` must become ``&lt;``)."""
    return value.translate(_TEXT_ESCAPES)


def math_span(formula_id: str | int, latex: str, display: bool = False) -> str:
    """An ARQMath formula span: ``<span class="math-container" id="ID">$LATEX$</span>`` (reference)."""
    dollars = "$$" if display else "$"
    return f'<span class="math-container" id="{formula_id}">{dollars}{html_escape(latex)}{dollars}</span>'


def hex8(rng: random.Random) -> str:
    """Eight lowercase hex digits, as in args.me ids ``S[0-9a-f]{8}-A[0-9a-f]{8}``."""
    return f"{rng.getrandbits(32):08x}"


def slug(title: str, sep: str = "-") -> str:
    return sep.join(re.findall(r"[A-Za-z0-9]+", title))


# reference: context fields of an args.me argument; sourceDomain values as ir_datasets parses them.
DOMAIN_OF_FILE: dict[str, str] = {
    "debateorg.json": "debate.org",
    "debatepedia.json": "debatepedia",
    "debatewise.json": "debatewise",
    "idebate.json": "idebate",
    "parliamentary.json": "canadian-parliament",
}


def source_meta(file_name: str, discussion: str, number: int) -> tuple[str, str]:
    """(sourceTitle, sourceUrl) in the style of each debate portal."""
    if file_name == "debateorg.json":
        return f"Debate Argument: {discussion} | Debate.org", f"https://www.debate.org/debates/{slug(discussion)}/{number % 5 + 1}/"
    if file_name == "debatepedia.json":
        return f"Debate: {discussion} - Debatepedia", f"http://www.debatepedia.org/en/index.php/Debate:_{slug(discussion, '_')}"
    if file_name == "debatewise.json":
        return f"{discussion} | Debatewise", f"https://debatewise.org/debates/{number}-{slug(discussion).lower()}/"
    if file_name == "idebate.json":
        return f"This House believes: {discussion} | idebate.org", f"https://idebate.org/debatabase/debates/{slug(discussion).lower()}"
    return f"House of Commons debate: {discussion}", f"https://www.lipad.ca/full/{2000 + number % 19}/{number % 12 + 1:02d}/{number % 28 + 1:02d}/"


@dataclass
class Argument:
    """One args.me argument before serialization."""

    id: str
    conclusion: str
    premise: str
    stance: str
    file_name: str
    source_id: str
    discussion: str
    number: int
    acquisition: str
    previous_id: str = ""
    next_id: str = ""
    aspects: list[tuple[str, float]] = field(default_factory=list)
    author: str | None = None


def argsme_record(arg: Argument) -> dict:
    """The JSON object of one argument: id, conclusion, premises, full context (reference)."""
    source_text = f"{arg.conclusion} {arg.premise}"
    title, url = source_meta(arg.file_name, arg.discussion, arg.number)
    premise: dict = {"text": arg.premise, "stance": arg.stance}
    if arg.file_name != "parliamentary.json":  # annotations are optional (reference: "annotations"?)
        premise["annotations"] = []
    context: dict = {
        "sourceId": arg.source_id,
        "previousArgumentInSourceId": arg.previous_id,
        "acquisitionTime": arg.acquisition,
        "discussionTitle": arg.discussion,
        "sourceTitle": title,
        "sourceUrl": url,
        "nextArgumentInSourceId": arg.next_id,
        "sourceDomain": DOMAIN_OF_FILE[arg.file_name],
        "sourceText": source_text,
        "sourceTextConclusionStart": 0,
        "sourceTextConclusionEnd": len(arg.conclusion),
        "sourceTextPremiseStart": len(arg.conclusion) + 1,
        "sourceTextPremiseEnd": len(source_text),
        "mode": "discussion" if arg.file_name == "parliamentary.json" else "person",
    }
    if arg.author is not None:
        context["author"] = arg.author
        context["authorRole"] = "Member of Parliament"
        context["authorOrganization"] = "House of Commons"
        context["date"] = arg.acquisition
    if arg.aspects:
        context["aspects"] = [
            {"name": name, "weight": weight, "normalizedWeight": round(weight / sum(w for _, w in arg.aspects), 4), "rank": rank}
            for rank, (name, weight) in enumerate(arg.aspects, start=1)
        ]
    return {"id": arg.id, "conclusion": arg.conclusion, "premises": [premise], "context": context}


def argsme_json(records: Iterable[dict]) -> str:
    """``{"arguments": [...]}`` with one argument per line (whitespace is insignificant in JSON)."""
    body = ",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in records)
    return '{"arguments":[\n' + body + "\n]}\n"


def tsv(rows: Iterable[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Tab-separated with csv QUOTE_MINIMAL, as the ARQMath formula index is written (reference)."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    if header:
        writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


# --------------------------------------------------------------------------------------
# Text generation: topical words mixed into background words by a density
# --------------------------------------------------------------------------------------

DEBATE_WORDS = (
    "the of and to a in is that it for as with be on not this are by or have from but "
    "they we an which their more people can would there if all will about when because "
    "should could one most other than many also some these those only very much such "
    "government country society public law rule rights freedom choice money cost benefit "
    "evidence study research example argument point reason claim opponent debate round "
    "first second finally however therefore although while whereas indeed clearly simply "
    "life world time year years children family community state states nation citizens "
    "problem problems issue issues policy policies system systems change changes support "
    "protect harm risk risks safe danger effect effects result results impact important "
    "better worse good bad fair unfair right wrong moral ethical economic social political "
    "individual individuals group groups power control example case cases fact facts data "
    "percent number majority minority example history future today modern current local"
).split()

MATH_WORDS = (
    "the of and to a in is that it for we let be then so if this by with as on can since "
    "thus hence therefore where which note consider suppose assume show prove proof follows "
    "function value values number numbers equation equations term terms result step steps "
    "case cases condition conditions given using use write get obtain find found simply "
    "clearly exactly both each every any some all first second last now here there true "
    "false hint answer question example counterexample method approach way idea argument "
    "real integer integers positive negative finite constant variable expression identity "
    "definition theorem lemma claim means implies equivalent follows holds apply applying "
    "substitute substitution rewrite compute computing calculate notice observe recall"
).split()


def words_text(rng: random.Random, background: Sequence[str], topical: Sequence[str],
               density: float, n_words: int) -> str:
    """Sentences of background words with topical words mixed in at ``density``."""
    sentences: list[str] = []
    left = n_words
    while left > 0:
        length = min(left, rng.randint(7, 15))
        left -= length
        words = [rng.choice(topical) if topical and rng.random() < density else rng.choice(background)
                 for _ in range(length)]
        sentences.append(" ".join(words).capitalize() + ".")
    return " ".join(sentences)


# --------------------------------------------------------------------------------------
# Touché (args.me) samples
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DebateTheme:
    """A debate subject: the topic (if judged) and the vocabulary its arguments use."""

    number: int | None          # topic number, None for background subjects
    title: str
    description: str
    narrative: str
    claims: tuple[str, ...]     # conclusions used by arguments (pro first, then con)
    keywords: tuple[str, ...]
    size: int = 24              # topical arguments generated
    judged: bool = True
    grade_bias: float = 0.0     # shifts the latent grades (negative: few relevant ones)


def _theme(number: int | None, title: str, claims: str, keywords: str, *, description: str = "",
           narrative: str = "", size: int = 24, judged: bool = True, grade_bias: float = 0.0) -> DebateTheme:
    return DebateTheme(number, title, description, narrative, tuple(claims.split("|")),
                       tuple(keywords.split()), size, judged, grade_bias)


TOUCHE_2020_TOPICS: tuple[DebateTheme, ...] = (
    _theme(1, "Should teachers get tenure?",
           "Teachers should get tenure|Teacher tenure protects good teachers|Tenure protects bad teachers|Abolish teacher tenure",
           "teacher teachers tenure tenured job security school schools fired dismissal union unions classroom seniority principal",
           description="A user has heard that some countries give teachers tenure and others do not. They want to know the arguments for and against tenure for teachers.",
           narrative="Highly relevant arguments make a clear statement about tenure for teachers in schools or universities. Arguments about job security of other professions are not relevant."),
    _theme(2, "Is vaping with e-cigarettes safe?",
           "Vaping is safe|E-cigarettes are safer than smoking|Vaping is dangerous|E-cigarettes should be banned",
           "vaping vape e-cigarettes e-cigarette nicotine smoking smokers cigarettes lungs lung flavors vapor safe health tobacco",
           description="Given news about lung injuries, a user wonders whether vaping with e-cigarettes is safe, especially compared to smoking.",
           narrative="Highly relevant arguments discuss the health effects of vaping or e-cigarettes. Arguments about smoking only are relevant if they compare it to vaping."),
    _theme(3, "Should insider trading be allowed?",
           "Insider trading should be legal|Insider trading should remain illegal",
           "insider trading trader traders stock stocks market markets shares investors securities information profit sec",
           description="A user reads about a manager convicted of insider trading and asks whether trading on insider information should be allowed.",
           narrative="Relevant arguments state whether insider trading helps or harms markets and investors.",
           size=12, grade_bias=-1.2),
    _theme(4, "Should corporal punishment be used in schools?",
           "Corporal punishment should be used in schools|Corporal punishment in schools should be banned",
           "corporal punishment spanking paddling discipline students student pupils schools school violence behavior punish",
           description="A parent wants to know whether teachers should be allowed to use corporal punishment to discipline students.",
           narrative="Highly relevant arguments take a position on physical punishment of students in schools. Arguments about spanking at home are relevant only if they mention schools."),
    _theme(5, "Should social security be privatized?",
           "Social security should be privatized|Privatizing social security is a mistake",
           "social security privatize privatized privatization retirement pension pensions retirees accounts benefits payroll tax",
           description="A user worries about their pension and wants arguments for and against privatizing social security.",
           narrative="Relevant arguments discuss private retirement accounts versus the public social security system.",
           size=20),
    _theme(6, "Should the death penalty be abolished?",
           "The death penalty should be abolished|Capital punishment deters crime",
           "death penalty capital punishment execution executions executed murder murderers crime deterrence innocent",
           description="A user wants to know the arguments about abolishing the death penalty.",
           narrative="Relevant arguments take a position on capital punishment.",
           size=16, judged=False),
)

TOUCHE_2021_TOPICS: tuple[DebateTheme, ...] = (
    _theme(51, "Do we need sex education in schools?",
           "Sex education should be taught in schools|Sex education belongs to parents",
           "sex education schools school students teenagers contraception pregnancy abstinence curriculum parents health"),
    _theme(52, "Should stem cell research be expanded?",
           "Stem cell research should be expanded|Embryonic stem cell research is unethical",
           "stem cell cells research embryonic embryos embryo cure diseases scientists funding medical therapy",
           size=22),
    _theme(53, "Should blood donations be financially compensated?",
           "Blood donors should be paid|Paying for blood donations is wrong",
           "blood donation donations donors donor paid payment compensation plasma hospitals supply transfusion",
           size=12, grade_bias=-1.2),
    _theme(54, "Should the penny stay in circulation?",
           "Keep the penny|The penny should be abolished",
           "penny pennies coin coins cent cents currency circulation mint rounding prices zinc copper"),
    _theme(55, "Should gay marriage be legal?",
           "Gay marriage should be legal|Marriage is between a man and a woman",
           "gay marriage same-sex couples couple married equality homosexual wedding civil unions religious",
           size=20),
    _theme(56, "Should zoos exist?",
           "Zoos should be banned|Zoos help conservation",
           "zoo zoos animals animal captivity conservation species endangered wildlife cages visitors breeding",
           size=14, judged=False),
)

BACKGROUND_DEBATES: tuple[DebateTheme, ...] = (
    _theme(None, "Video games cause violence", "Video games cause violence|Video games are harmless",
           "video games gamers gaming violent violence players console shooter addiction", size=18),
    _theme(None, "School uniforms", "Schools should require uniforms|Uniforms limit expression",
           "uniform uniforms dress code students clothes clothing bullying expression", size=18),
    _theme(None, "Minimum wage", "Raise the minimum wage|A higher minimum wage costs jobs",
           "minimum wage wages workers employers jobs unemployment hourly poverty income", size=18),
    _theme(None, "Nuclear power", "Nuclear power is the future|Nuclear power is too dangerous",
           "nuclear power reactor reactors energy radiation waste uranium plants meltdown", size=18),
    _theme(None, "Homework", "Homework should be banned|Homework improves learning",
           "homework assignments students hours learning grades evenings practice", size=16),
    _theme(None, "Space exploration", "Space exploration is worth the cost|Space exploration wastes money",
           "space nasa mars moon rockets astronauts exploration missions satellites", size=16),
    _theme(None, "Animal testing", "Animal testing should be banned|Animal testing saves lives",
           "animal animals testing experiments laboratory cosmetics medicine mice suffering", size=16),
    _theme(None, "Electoral college", "Abolish the electoral college|Keep the electoral college",
           "electoral college votes voters election elections president popular vote", size=14),
)

SPAM_PREMISES = ("Done.", "I accept.", "Let's get this over with.", "Thanks for the debate. Vote Pro!",
                 "Extend all arguments.", "My opponent forfeited this round.")


def _touche_arguments(rng: random.Random, themes: Sequence[DebateTheme]) -> tuple[list[Argument], dict[str, tuple[DebateTheme, int]]]:
    """Arguments grouped into debates (sources), with each topical argument's latent grade.

    The latent grade (-2 = spam, 0..5) drives how many topic words the premise holds,
    so that lexical retrieval finds the relevant ones; qrels are derived from it.
    """
    arguments: list[Argument] = []
    latent: dict[str, tuple[DebateTheme, int]] = {}
    file_weights = (0.62, 0.14, 0.12, 0.12, 0.0)
    source_number = 0
    for theme in themes:
        remaining = theme.size
        while remaining > 0:
            size = min(remaining, rng.randint(2, 6))
            remaining -= size
            source_number += 1
            file_name = rng.choices(ARGSME_FILES, weights=file_weights)[0]
            source_id = hex8(rng)
            discussion = theme.claims[0] if file_name == "debateorg.json" else rng.choice(theme.claims)
            acquisition = f"2019-04-{rng.randint(10, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}Z"
            debate: list[Argument] = []
            for _ in range(size):
                grade = max(0, min(5, round(rng.triangular(0, 5, 3.2) + theme.grade_bias))) if theme.number else 0
                if theme.number and rng.random() < 0.07:
                    grade = -2
                stance = rng.choice(("PRO", "CON"))
                conclusion = discussion if file_name == "debateorg.json" else rng.choice(theme.claims)
                if grade == -2:
                    premise = rng.choice(SPAM_PREMISES)
                else:
                    density = 0.05 + 0.06 * grade if theme.number else 0.12
                    premise = words_text(rng, DEBATE_WORDS, theme.keywords, density, rng.randint(25, 60) + 6 * grade)
                if rng.random() < 0.05:
                    premise += " That’s my view – période."  # non-ASCII survives the round trip
                aspects = [(k, round(rng.uniform(0.5, 3.0), 3)) for k in rng.sample(theme.keywords, 2)] if rng.random() < 0.3 else []
                arg = Argument(
                    id=f"S{source_id}-A{hex8(rng)}", conclusion=conclusion, premise=premise, stance=stance,
                    file_name=file_name, source_id=source_id, discussion=discussion, number=source_number,
                    acquisition=acquisition, aspects=aspects,
                )
                debate.append(arg)
                if theme.number:
                    latent[arg.id] = (theme, grade)
            for before, after in zip(debate, debate[1:]):
                before.next_id, after.previous_id = after.id, before.id
            arguments.extend(debate)
    # The parliamentary file is tiny (48 arguments in the real corpus): a few speeches.
    source_id = hex8(rng)
    speeches = []
    for i in range(4):
        speeches.append(Argument(
            id=f"S{source_id}-A{hex8(rng)}", conclusion="The government must act on child protection",
            premise=words_text(rng, DEBATE_WORDS, ("children", "protection", "minister", "justice", "law", "petition"), 0.15, 50),
            stance=rng.choice(("PRO", "CON")), file_name="parliamentary.json", source_id=source_id,
            discussion="Child protection", number=900 + i, acquisition="2019-05-02T09:00:00Z",
            author=rng.choice(("Mr. Randy White", "Ms. Val Meredith", "Mr. Jim Abbott")),
        ))
    for before, after in zip(speeches, speeches[1:]):
        before.next_id, after.previous_id = after.id, before.id
    arguments.extend(speeches)
    return arguments, latent


def _touche_duplicates(rng: random.Random, arguments: list[Argument], latent: dict[str, tuple[DebateTheme, int]]) -> list[tuple[str, str]]:
    """Exact copies of some topical arguments under new ids (tied scores); returns (copy, original)."""
    pairs: list[tuple[str, str]] = []
    by_topic: dict[int, list[Argument]] = {}
    for arg in arguments:
        if arg.id in latent and latent[arg.id][1] > 0:
            by_topic.setdefault(latent[arg.id][0].number or 0, []).append(arg)
    for number, candidates in by_topic.items():
        for original in rng.sample(candidates, min(2, len(candidates))):
            source_id = hex8(rng)
            copy = Argument(
                id=f"S{source_id}-A{hex8(rng)}", conclusion=original.conclusion, premise=original.premise,
                stance=original.stance, file_name=rng.choice(ARGSME_FILES[1:4]), source_id=source_id,
                discussion=original.discussion, number=500 + len(pairs), acquisition=original.acquisition,
            )
            arguments.append(copy)
            latent[copy.id] = latent[original.id]
            pairs.append((copy.id, original.id))
    return pairs


def _touche_topics_xml(themes: Sequence[DebateTheme], with_details: bool) -> str:
    """reference: <topics><topic><number/><title/>[<description/><narrative/>]</topic></topics>."""
    lines = ["<topics>"]
    for t in themes:
        lines.append("  <topic>")
        lines.append(f"    <number>{t.number}</number>")
        lines.append(f"    <title>{xml_text(t.title)}</title>")
        if with_details:
            lines.append(f"    <description>{xml_text(t.description)}</description>")
            lines.append(f"    <narrative>{xml_text(t.narrative)}</narrative>")
        lines.append("  </topic>")
    lines.append("</topics>")
    return "\n".join(lines) + "\n"


def touche_sample(year: int) -> dict[str, str]:
    """Files of the Touché ``year`` sample, keyed by relative path."""
    rng = random.Random(f"touche-{year}")
    topics = TOUCHE_2020_TOPICS if year == 2020 else TOUCHE_2021_TOPICS
    arguments, latent = _touche_arguments(rng, (*topics, *BACKGROUND_DEBATES))
    duplicates = _touche_duplicates(rng, arguments, latent)
    skipped = {copy for i, (copy, _) in enumerate(duplicates) if i % 2}  # every other copy stays unjudged

    files: dict[str, str] = {}
    for file_name in ARGSME_FILES:
        files[f"input/{file_name}"] = argsme_json(argsme_record(a) for a in arguments if a.file_name == file_name)
    files["input/topics.xml"] = _touche_topics_xml(topics, with_details=(year == 2020))

    background = [a.id for a in arguments if a.id not in latent]
    relevance: list[tuple[int, str, int]] = []
    quality: list[tuple[int, str, int]] = []
    for theme in topics:
        if not theme.judged:
            continue
        judged = [a for a in sorted(latent) if latent[a][0] is theme and a not in skipped and rng.random() < 0.85]
        for doc_id in judged:
            grade = latent[doc_id][1]
            if year == 2020:
                relevance.append((theme.number, doc_id, grade))  # reference: 2020 rel in {-2, 0..5}
            else:
                rel = -2 if grade == -2 else (0, 0, 1, 1, 2, 2)[grade]  # reference: 2021 {-2, 0, 1, 2}
                relevance.append((theme.number, doc_id, rel))
                quality.append((theme.number, doc_id, 0 if grade <= 0 else max(0, min(3, grade - rng.randint(1, 2)))))
        for doc_id in rng.sample(background, 4):  # judged non-relevant documents of other debates
            relevance.append((theme.number, doc_id, 0))
            quality.append((theme.number, doc_id, rng.randint(0, 2)))
    files["truth/qrels.txt"] = "".join(f"{q} 0 {d} {r}\n" for q, d, r in sorted(relevance))
    if year == 2021:
        files["truth/qrels-quality.txt"] = "".join(f"{q} 0 {d} {r}\n" for q, d, r in sorted(quality))
    return files


# --------------------------------------------------------------------------------------
# ARQMath samples
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MathTheme:
    """A math question subject: its topic text, vocabulary and graded formula family."""

    number: int | None                       # 301.. for topics, None for background threads
    title: str                               # may contain {f0}: the first formula inline
    question: str                            # HTML-free text; {fN} = formula N of the family
    tags: tuple[str, ...]
    keywords: tuple[str, ...]
    formulas: tuple[tuple[str, int], ...]    # (LaTeX, relevance to the topic formula 0..3)
    query_formula: int = 0                   # index in formulas of the Task 2 query formula
    threads: int = 6
    judged: bool = True
    grade_bias: float = 0.0


def _mtheme(number: int | None, title: str, question: str, tags: str, keywords: str,
            formulas: Sequence[tuple[str, int]], **kw: object) -> MathTheme:
    return MathTheme(number, title, question, tuple(tags.split(",")), tuple(keywords.split()), tuple(formulas), **kw)  # type: ignore[arg-type]


ARQMATH_TOPICS: tuple[MathTheme, ...] = (
    _mtheme(301, "Sum of the geometric series {f0}",
            "I know that {f0} but I do not understand why the ratio must satisfy {f1}. How do we get the partial sums {f2} and why do they converge?",
            "sequences-and-series,convergence-divergence", "geometric series sum ratio converge converges convergence partial sums infinite",
            (("\\sum_{n=0}^{\\infty} r^n=\\frac{1}{1-r}", 3), ("|r|<1", 2), ("S_n=\\frac{a(1-r^{n})}{1-r}", 3),
             ("\\sum_{k=0}^{\\infty} r^k", 3), ("\\sum_{n=0}^{N} r^n", 2), ("\\sum_{n=1}^{\\infty}\\frac{1}{n^2}", 1))),
    _mtheme(302, "Derivative of {f0}",
            "How do I differentiate {f0}? I tried the power rule and got {f1} which is wrong. Should I take logarithms, {f2}?",
            "calculus,derivatives", "derivative differentiate differentiation logarithmic logarithm exponent chain rule power",
            (("y=x^x", 3), ("x\\cdot x^{x-1}", 1), ("\\ln y=x\\ln x", 3), ("\\frac{d}{dx}x^x=x^x(\\ln x+1)", 3),
             ("\\frac{y'}{y}=\\ln x+1", 2), ("\\frac{d}{dx}a^x=a^x\\ln a", 1))),
    _mtheme(303, "Proof that {f0} is irrational",
            "Suppose {f0} were rational, so {f1} in lowest terms. Then {f2}. Why does this give a contradiction with the gcd?",
            "elementary-number-theory,proof-writing,irrational-numbers", "irrational rational contradiction lowest terms gcd even odd square root proof",
            (("\\sqrt{2}", 3), ("\\sqrt{2}=\\frac{p}{q}", 3), ("p^2=2q^2", 3), ("\\gcd(p,q)=1", 2),
             ("\\sqrt{3}", 1), ("\\text{Erd\\\"os}", 0)),
            threads=5, grade_bias=-0.4),
    _mtheme(304, "Evaluating the Gaussian integral {f0}",
            "How can one compute {f0}? I have seen a trick squaring it, {f1}, and then switching to polar coordinates {f2}.",
            "integration,definite-integrals,improper-integrals", "gaussian integral polar coordinates square squaring improper exponential",
            (("\\int_{-\\infty}^{\\infty}e^{-x^2}\\,dx=\\sqrt{\\pi}", 3), ("I^2=\\int\\int e^{-(x^2+y^2)}\\,dx\\,dy", 3),
             ("\\int_0^{2\\pi}\\int_0^{\\infty}e^{-r^2}r\\,dr\\,d\\theta", 3), ("\\int_{-\\infty}^{\\infty}e^{-ax^2}\\,dx=\\sqrt{\\frac{\\pi}{a}}", 2),
             ("\\Gamma(\\tfrac{1}{2})=\\sqrt{\\pi}", 1))),
    _mtheme(305, "Eigenvalues of a {f0} matrix",
            "For {f1} the characteristic polynomial is {f2}. Is there a quick way to see the eigenvalues from the trace and determinant?",
            "linear-algebra,matrices,eigenvalues-eigenvectors", "eigenvalues eigenvalue eigenvector matrix characteristic polynomial trace determinant roots",
            (("2\\times 2", 1), ("A=\\begin{pmatrix}a&b\\\\c&d\\end{pmatrix}", 3), ("\\det(A-\\lambda I)=0", 3),
             ("\\lambda^2-\\operatorname{tr}(A)\\lambda+\\det(A)=0", 3), ("\\lambda_1\\lambda_2=\\det A", 2), ("Av=\\lambda v", 1)),
            query_formula=2),
    _mtheme(306, "Pigeonhole principle with {f0} objects",
            "If {f0} objects go into {f1} boxes, some box has at least {f2} objects. How is this used in proofs?",
            "combinatorics,pigeonhole-principle", "pigeonhole boxes objects box principle counting at least",
            (("n+1", 2), ("n", 1), ("\\lceil n/k\\rceil", 3)), threads=3, judged=False),
)

MATH_BACKGROUND: tuple[MathTheme, ...] = (
    _mtheme(None, "Limit of {f0}", "Compute {f0}. I think it is {f1}.", "limits,calculus", "limit limits approaches tends hospital squeeze",
            (("\\lim_{x\\to 0}\\frac{\\sin x}{x}", 0), ("1", 0), ("\\lim_{n\\to\\infty}(1+\\frac{1}{n})^n=e", 0)), threads=6),
    _mtheme(None, "Solving {f0}", "How do I solve {f0}? The answer should be {f1}.", "modular-arithmetic,number-theory",
            "modulo congruence remainder mod divisible prime inverse", (("3x\\equiv 1 \\pmod{7}", 0), ("x\\equiv 5", 0), ("a^{p-1}\\equiv 1", 0)), threads=6),
    _mtheme(None, "Probability of rolling {f0}", "Two dice are rolled; what is {f0}? I get {f1}.", "probability,dice",
            "probability dice roll rolls outcome outcomes independent event events", (("P(X=7)", 0), ("\\frac{1}{6}", 0), ("\\binom{n}{k}p^k(1-p)^{n-k}", 0)), threads=6),
    _mtheme(None, "Subgroups of {f0}", "Find all subgroups of {f0}. Is {f1} normal?", "group-theory,abstract-algebra",
            "group subgroup subgroups normal order cyclic element elements quotient", (("\\mathbb{Z}/6\\mathbb{Z}", 0), ("H\\trianglelefteq G", 0), ("|G|=p^2", 0)), threads=6),
    _mtheme(None, "Induction proof of {f0}", "Prove by induction that {f0} for all {f1}.", "induction,summation",
            "induction base case inductive step hypothesis assume holds", (("\\sum_{k=1}^{n}k=\\frac{n(n+1)}{2}", 0), ("n\\geq 1", 0), ("2^n>n", 0)), threads=6),
    _mtheme(None, "Taylor series of {f0}", "What is the Taylor series of {f0} around {f1}?", "taylor-expansion,power-series",
            "taylor series expansion maclaurin coefficients radius approximation", (("\\cos x", 0), ("x=0", 0), ("e^x=\\sum_{n=0}^{\\infty}\\frac{x^n}{n!}", 0)), threads=6),
    _mtheme(None, "Roots of {f0}", "Find all complex roots of {f0} using {f1}.", "complex-numbers,roots-of-unity",
            "complex roots unity modulus argument polar de moivre", (("z^5=1", 0), ("e^{2\\pi i k/5}", 0), ("|z|=1", 0)), threads=5),
    _mtheme(None, "Area of a triangle with {f0}", "A triangle has {f0}. Find its area with {f1}.", "geometry,triangles",
            "triangle area sides angle heron height base", (("a=3,b=4,c=5", 0), ("A=\\sqrt{s(s-a)(s-b)(s-c)}", 0), ("\\frac{1}{2}ab\\sin C", 0)), threads=5),
)


@dataclass
class Post:
    """A question or answer of the sample collection, with its formulae already numbered."""

    id: int
    type_id: int                     # 1 question, 2 answer
    parent_id: int | None
    thread_id: int
    score: int
    created: str
    body: str                        # HTML
    title: str = ""                  # HTML (questions only)
    tags: tuple[str, ...] = ()
    owner: int = 0
    answer_count: int = 0
    accepted: int | None = None
    formulas: list[tuple[int, str, str]] = field(default_factory=list)  # (formula id, type, latex)
    theme: MathTheme | None = None
    grade: int = 0
    plain: str = ""                  # the text with $latex$, for Task 3 answers


_EPOCH = datetime(2010, 7, 20, 19, 9, 27)


def _stamp(moment: datetime) -> str:
    """Stack Exchange timestamps: ``2010-07-20T19:09:27.200`` (milliseconds, no zone)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


class _FormulaCounter:
    """Hands out formula ids in collection order (ids are per occurrence, reference)."""

    def __init__(self, start: int) -> None:
        self.next = start

    def take(self) -> int:
        self.next += 1
        return self.next - 1


def _fill(template: str, latex: Sequence[str], ids: Sequence[str | int] | None, counter: _FormulaCounter | None,
          sink: list[tuple[int, str, str]] | None, kind: str) -> tuple[str, str]:
    """Replace {fN} by formula spans; returns (html, plain text with $latex$)."""
    html_parts: list[str] = []
    plain_parts: list[str] = []
    pos = 0
    for m in re.finditer(r"\{f(\d)\}", template):
        text = template[pos:m.start()]
        html_parts.append(html_escape(text))
        plain_parts.append(text)
        tex = latex[int(m.group(1))]
        if counter is not None and sink is not None:
            fid: str | int = counter.take()
            sink.append((int(fid), kind, tex))
        else:
            assert ids is not None
            fid = ids[int(m.group(1))]
        html_parts.append(math_span(fid, tex))
        plain_parts.append(f"${tex}$")
        pos = m.end()
    html_parts.append(html_escape(template[pos:]))
    plain_parts.append(template[pos:])
    return "".join(html_parts), "".join(plain_parts)


def _answer_body(rng: random.Random, theme: MathTheme, grade: int, counter: _FormulaCounter,
                 sink: list[tuple[int, str, str]]) -> tuple[str, str]:
    """An answer: paragraphs of words with formula spans; better answers use more of the topic's formulae."""
    density = (0.04, 0.12, 0.2, 0.28)[grade] if theme.number else 0.14
    relevant = [f for f, r in theme.formulas if r >= 2] or [f for f, _ in theme.formulas]
    others = [f for f, r in theme.formulas if r < 2] or relevant
    html_pars: list[str] = []
    plain_pars: list[str] = []
    for p in range(rng.randint(1, 3)):
        text = words_text(rng, MATH_WORDS, theme.keywords, density, rng.randint(12, 30) + 5 * grade)
        pool = relevant if (theme.number is None or rng.random() < 0.25 * grade + 0.1) else others
        tex = rng.choice(pool)
        display = rng.random() < 0.3
        fid = counter.take()
        sink.append((fid, "answer", tex))
        html_pars.append(f"<p>{html_escape(text)} {math_span(fid, tex, display)}</p>")
        plain_pars.append(f"{text} {'$$' if display else '$'}{tex}{'$$' if display else '$'}")
    return "\n\n".join(html_pars) + "\n", "\n".join(plain_pars)


def _arqmath_collection(rng: random.Random) -> tuple[list[Post], list[Post]]:
    """Questions and answers (ids ascending by creation) plus the duplicated answers."""
    counter = _FormulaCounter(start=1001)
    posts: list[Post] = []
    next_id = 11
    day = 0
    themes = (*ARQMATH_TOPICS, *MATH_BACKGROUND)
    # Interleave threads of all themes in creation order, as in the real dump.
    thread_plan = [t for t in themes for _ in range(t.threads)]
    rng.shuffle(thread_plan)
    for theme in thread_plan:
        day += rng.randint(3, 20)
        qid = next_id
        next_id += rng.randint(1, 3)
        question = Post(id=qid, type_id=1, parent_id=None, thread_id=qid, score=rng.randint(-1, 40),
                        created=_stamp(_EPOCH + timedelta(days=day, seconds=rng.randint(0, 86399))),
                        body="", tags=theme.tags, owner=rng.randint(2, 99999), theme=theme)
        order = list(range(len(theme.formulas)))
        rng.shuffle(order)
        latex = [theme.formulas[i][0] for i in order]
        question.title, _ = _fill(theme.title, latex, None, counter, question.formulas, "title")
        qtext = words_text(rng, MATH_WORDS, theme.keywords, 0.15, rng.randint(10, 25))
        qhtml, _ = _fill(theme.question, latex, None, counter, question.formulas, "question")
        question.body = f"<p>{qhtml}</p>\n\n<p>{html_escape(qtext)}</p>\n"
        posts.append(question)
        n_answers = rng.randint(2, 6) if theme.number else rng.randint(1, 4)
        question.answer_count = n_answers
        for _ in range(n_answers):
            aid = next_id
            next_id += rng.randint(1, 4)
            grade = max(0, min(3, round(rng.triangular(0, 3, 2.2) + theme.grade_bias))) if theme.number else 0
            answer = Post(id=aid, type_id=2, parent_id=qid, thread_id=qid, score=rng.randint(-2, 60) + 10 * grade,
                          created=_stamp(_EPOCH + timedelta(days=day, seconds=86400 + rng.randint(60, 9 * 86400))),
                          body="", owner=rng.randint(2, 99999),
                          theme=theme, grade=grade)
            answer.body, answer.plain = _answer_body(rng, theme, grade, counter, answer.formulas)
            posts.append(answer)
        answers = [p for p in posts if p.parent_id == qid]
        if rng.random() < 0.6:
            question.accepted = max(answers, key=lambda a: (a.score, -a.id)).id
    # Copy-pasted answers (same body in another thread): identical text, tied scores.
    duplicates: list[Post] = []
    topical = [p for p in posts if p.type_id == 2 and p.theme is not None and p.theme.number and p.grade >= 2]
    background_questions = [p for p in posts if p.type_id == 1 and p.theme is not None and p.theme.number is None]
    for original in rng.sample(topical, 5):
        host = rng.choice(background_questions)
        aid = next_id
        next_id += 1
        copy = Post(id=aid, type_id=2, parent_id=host.id, thread_id=host.id, score=0, created="2018-12-01T10:00:00.000",
                    body="", owner=rng.randint(2, 99999), theme=original.theme, grade=original.grade, plain=original.plain)
        # same HTML except formula ids, which are per occurrence
        formulas = [(counter.take(), "answer", tex) for _, _, tex in original.formulas]
        body = original.body
        for (old, _, _), (new, _, _) in zip(original.formulas, formulas):
            body = body.replace(f'id="{old}"', f'id="{new}"')
        copy.body, copy.formulas = body, formulas
        host.answer_count += 1
        duplicates.append(copy)
        posts.append(copy)
    return posts, duplicates


def _posts_xml(posts: Sequence[Post]) -> str:
    """reference: <posts><row Id PostTypeId [ParentId] ... Body Title Tags .../></posts>, Stack Exchange attribute order."""
    lines = ['<?xml version="1.0" encoding="utf-8"?>', "<posts>"]
    for p in posts:
        attrs: list[tuple[str, str]] = [("Id", str(p.id)), ("PostTypeId", str(p.type_id))]
        if p.type_id == 1:
            if p.accepted is not None:
                attrs.append(("AcceptedAnswerId", str(p.accepted)))
        else:
            attrs.append(("ParentId", str(p.parent_id)))
        attrs += [("CreationDate", p.created), ("Score", str(p.score))]
        if p.type_id == 1:
            attrs.append(("ViewCount", str(40 * abs(p.score) + 17)))
        attrs += [("Body", p.body), ("OwnerUserId", str(p.owner)), ("LastActivityDate", p.created)]
        if p.type_id == 1:
            attrs += [("Title", p.title), ("Tags", "".join(f"<{t}>" for t in p.tags)),
                      ("AnswerCount", str(p.answer_count))]
        attrs.append(("CommentCount", str(p.id % 4)))
        lines.append("  <row " + " ".join(f'{k}="{xml_attr(v)}"' for k, v in attrs) + " />")
    lines.append("</posts>")
    return "\n".join(lines) + "\n"


def _formula_index(rng: random.Random, posts: Sequence[Post]) -> tuple[list[list[object]], dict[str, int]]:
    """Formula index rows (v3 layout) plus the LaTeX -> visual id map; identical LaTeX shares a visual id."""
    visual: dict[str, int] = {}
    rows: list[list[object]] = []
    next_visual = 500
    for p in posts:
        for fid, kind, tex in p.formulas:
            if tex not in visual:
                visual[tex] = next_visual
                next_visual += rng.randint(1, 9)
            rows.append([fid, p.id, p.thread_id, kind, "", visual[tex], visual[tex], "", tex])
    # reference: issue "v" = visual id reassigned (old_visual_id differs).
    for row in rng.sample(rows, 4):
        row[5], row[7] = int(row[6]) + 100000, "v"
    # Formulae in comments: type comment, with comment_id; not in Posts.xml.
    answers = [p for p in posts if p.type_id == 2]
    comment_id = 70001
    next_fid = max(int(r[0]) for r in rows) + 1
    for p in rng.sample(answers, 6):
        tex = rng.choice(p.formulas)[2] if p.formulas else "x"
        rows.append([next_fid, p.id, p.thread_id, "comment", comment_id, visual[tex], visual[tex], "", tex])
        next_fid += 1
        comment_id += rng.randint(1, 50)
    # reference: issue "d" = formula no longer in the posts (not retrievable); "dv" both.
    for issue, tex in (("d", "x^2+y^2=z^2"), ("d", "\\frac{a}{b}"), ("dv", "\\sqrt{2}")):
        host = rng.choice(answers)
        vid = visual.setdefault(tex, next_visual)
        next_visual += 1
        rows.append([next_fid, host.id, host.thread_id, "answer", "", vid + (100000 if "v" in issue else 0), vid, issue, tex])
        next_fid += 1
    rows.sort(key=lambda r: int(r[0]))  # type: ignore[call-overload]
    return rows, visual


def _topic_html(theme: MathTheme) -> tuple[str, str, list[str]]:
    """(Title HTML, Question HTML, LaTeX by q_N) with formula ids q_1, q_2, ... in reading order."""
    numbered: list[str] = []

    def spans(template: str) -> str:
        html_parts: list[str] = []
        pos = 0
        for m in re.finditer(r"\{f(\d)\}", template):
            html_parts.append(html_escape(template[pos:m.start()]))
            tex = theme.formulas[int(m.group(1))][0]
            numbered.append(tex)
            html_parts.append(math_span(f"q_{len(numbered)}", tex))
            pos = m.end()
        html_parts.append(html_escape(template[pos:]))
        return "".join(html_parts)

    title = spans(theme.title)
    question = f"<p>{spans(theme.question)}</p>"
    return title, question, numbered


def _arqmath_topics_xml(themes: Sequence[MathTheme], task2: bool) -> str:
    """reference: <Topics><Topic number="A.x"><Title/><Question/><Tags/></Topic>; B.x adds Formula_Id and Latex before Title."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<Topics>"]
    for t in themes:
        title, question, numbered = _topic_html(t)
        lines.append(f'  <Topic number="{"B" if task2 else "A"}.{t.number}">')
        if task2:
            query = t.formulas[t.query_formula][0]
            lines.append(f"    <Formula_Id>q_{numbered.index(query) + 1}</Formula_Id>")
            lines.append(f"    <Latex>{xml_text(query)}</Latex>")
        lines.append(f"    <Title>{xml_text(title)}</Title>")
        lines.append(f"    <Question>{xml_text(question)}</Question>")
        lines.append(f"    <Tags>{','.join(t.tags)}</Tags>")
        lines.append("  </Topic>")
    lines.append("</Topics>")
    return "\n".join(lines) + "\n"


def _arqmath_qrels(lines: Iterable[tuple[str, object, int]]) -> str:
    """reference: 'topic 0 id rel', tab separated, CRLF line endings."""
    return "".join(f"{t}\t0\t{d}\t{r}\r\n" for t, d, r in lines)


def _topic_sort_key(line: tuple[str, object, int]) -> tuple[int, int]:
    return int(line[0].split(".")[1]), int(str(line[1]))


def arqmath_sample(task: int) -> dict[str, str]:
    """Files of the ARQMath Task ``task`` sample (1, 2 or 3), keyed by relative path."""
    rng = random.Random("arqmath")  # one collection for all three tasks, like the real one
    posts, duplicates = _arqmath_collection(rng)
    rows, visual = _formula_index(rng, posts)
    half = len(rows) // 2
    formula_files = {"formulas/1.tsv": tsv(rows[:half], FORMULA_TSV_HEADER),
                     "formulas/2.tsv": tsv(rows[half:], FORMULA_TSV_HEADER)}
    files: dict[str, str] = {"input/Posts.xml": _posts_xml(posts)}
    files.update({f"input/{k}": v for k, v in formula_files.items()})
    files["input/topics.xml"] = _arqmath_topics_xml(ARQMATH_TOPICS, task2=(task == 2))

    judge = random.Random(f"arqmath-task{task}-judgments")
    skipped_copy = {d.id for i, d in enumerate(duplicates) if i % 2}
    answers = [p for p in posts if p.type_id == 2]
    qrels: list[tuple[str, object, int]] = []
    if task == 1:
        for theme in ARQMATH_TOPICS:
            if not theme.judged:
                continue
            for a in answers:
                if a.theme is theme and a.id not in skipped_copy and judge.random() < 0.85:
                    qrels.append((f"A.{theme.number}", a.id, a.grade))
            for a in judge.sample([a for a in answers if a.theme is not None and a.theme.number is None], 4):
                qrels.append((f"A.{theme.number}", a.id, 0))
        files["truth/qrels.tsv"] = _arqmath_qrels(sorted(qrels, key=_topic_sort_key))
    elif task == 2:
        # reference: Task 2 qrels judge visual ids; graded by the formula family of the topic.
        for theme in ARQMATH_TOPICS:
            if not theme.judged:
                continue
            in_collection = {tex for p in posts for _, _, tex in p.formulas}
            graded = {visual[tex]: rel for tex, rel in theme.formulas if tex in in_collection and judge.random() < 0.9}
            others = sorted({v for tex, v in visual.items() if tex not in dict(theme.formulas)})
            for vid in judge.sample(others, 6):
                graded.setdefault(vid, 0)
            qrels.extend((f"B.{theme.number}", vid, rel) for vid, rel in graded.items())
        files["truth/qrels.tsv"] = _arqmath_qrels(sorted(qrels, key=_topic_sort_key))
        files.update({f"truth/{k}": v for k, v in formula_files.items()})
    else:
        # reference: Task 3 qrels judge per-run answers (ids of our own), 0..3 plus 5 (system
        # failure) and 6 (do not know); answers.tsv holds the assessed texts for lexical overlap.
        texts: list[tuple[int, str, str]] = []
        answer_id = 1
        for theme in ARQMATH_TOPICS:
            if not theme.judged:
                continue
            pool = [a for a in answers if a.theme is theme]
            for a in judge.sample(pool, min(6, len(pool))):
                qrels.append((f"A.{theme.number}", answer_id, a.grade))
                texts.append((answer_id, f"A.{theme.number}", a.plain[:1200]))
                answer_id += 1
        for topic, rel, text in (("A.301", 5, ""), ("A.304", 6, "I do not know.")):
            qrels.append((topic, answer_id, rel))
            texts.append((answer_id, topic, text))
            answer_id += 1
        files["truth/qrels.tsv"] = _arqmath_qrels(sorted(qrels, key=_topic_sort_key))
        files["truth/answers.tsv"] = tsv(sorted(texts, key=lambda t: (int(t[1].split(".")[1]), t[0])), ANSWERS_TSV_HEADER)
    return files


# --------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------


def sample_files(name: str) -> dict[str, str]:
    """The files of sample ``name`` (relative path -> text), generated deterministically."""
    if name == "touche-2020":
        return touche_sample(2020)
    if name == "touche-2021":
        return touche_sample(2021)
    if name in ("arqmath-task1", "arqmath-task2", "arqmath-task3"):
        return arqmath_sample(int(name[-1]))
    raise ValueError(f"unknown sample {name!r}; known: {', '.join(SAMPLE_NAMES)}")


def write_sample(name: str, target: Path) -> list[Path]:
    """Write sample ``name`` into ``target`` (its input/ and truth/); returns the files written."""
    written: list[Path] = []
    for rel, text in sorted(sample_files(name).items()):
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))  # bytes: no platform newline translation
        written.append(path)
    return written


def iter_sample_paths(root: Path) -> Iterator[Path]:
    """Every file below ``root``, sorted (for comparisons)."""
    yield from sorted(p for p in root.rglob("*") if p.is_file())


def default_root() -> Path:
    from sharedtask.resources import resource

    return resource("tasks") / "samples"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sharedtask.samples", description="Regenerate the bundled sample datasets.")
    parser.add_argument("--out", type=Path, default=None, help="folder to write <name>/ into (default: tasks/samples)")
    parser.add_argument("names", nargs="*", default=list(SAMPLE_NAMES), help="samples to write (default: all)")
    args = parser.parse_args(argv)
    root = args.out or default_root()
    for name in args.names:
        if (root / name).is_dir():  # drop stale files of an older generator version
            shutil.rmtree(root / name)
        files = write_sample(name, root / name)
        size = sum(f.stat().st_size for f in files)
        print(f"{root / name}: {len(files)} files, {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
