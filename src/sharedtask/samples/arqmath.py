"""The ARQMath samples: one Math Stack Exchange-like collection, topics and qrels per task."""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Iterable, Sequence

from sharedtask.samples.builders import ANSWERS_TSV_HEADER, FORMULA_TSV_HEADER, html_escape, math_span, tsv, xml_attr, xml_text
from sharedtask.samples.registry import register
from sharedtask.samples.themes import MathTheme, math_background, math_topics, words, words_text


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
    """Hands out formula ids in collection order (ids are per occurrence, docs/formats.md)."""

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
        text = words_text(rng, words("math"), theme.keywords, density, rng.randint(12, 30) + 5 * grade)
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
    themes = (*math_topics(), *math_background())
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
        qtext = words_text(rng, words("math"), theme.keywords, 0.15, rng.randint(10, 25))
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
    """docs/formats.md: <posts><row Id PostTypeId [ParentId] ... Body Title Tags .../></posts>, Stack Exchange attribute order."""
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
    # docs/formats.md: issue "v" = visual id reassigned (old_visual_id differs).
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
    # docs/formats.md: issue "d" = formula no longer in the posts (not retrievable); "dv" both.
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
    """docs/formats.md: <Topics><Topic number="A.x"><Title/><Question/><Tags/></Topic>; B.x adds Formula_Id and Latex before Title."""
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
    """docs/formats.md: 'topic 0 id rel', tab separated, CRLF line endings."""
    return "".join(f"{t}\t0\t{d}\t{r}\r\n" for t, d, r in lines)


def _topic_sort_key(line: tuple[str, object, int]) -> tuple[int, int]:
    return int(line[0].split(".")[1]), int(str(line[1]))


def _exam_questions(themes: Sequence[MathTheme]) -> str:
    """EXAM questions per judged topic (docs/formats.md, "Exam questions"): the topic's
    formulas of grade 3 (at most two) and its first keyword are the answer keys a good
    answer states."""
    lines = []
    for theme in themes:
        if not theme.judged:
            continue
        topic = f"A.{theme.number}"
        keys = [(f"Which formula does a complete answer to {topic} state?", tex)
                for tex, rel in theme.formulas if rel == 3][:2]
        keys.append((f"Which notion must an answer to {topic} name?", theme.keywords[0]))
        for i, (question, key) in enumerate(keys, 1):
            lines.append(json.dumps({"topic": topic, "id": f"{topic}-q{i}", "question": question, "answer": key},
                                    ensure_ascii=False) + "\n")
    return "".join(lines)


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
    files["input/topics.xml"] = _arqmath_topics_xml(math_topics(), task2=(task == 2))

    judge = random.Random(f"arqmath-task{task}-judgments")
    skipped_copy = {d.id for i, d in enumerate(duplicates) if i % 2}
    answers = [p for p in posts if p.type_id == 2]
    qrels: list[tuple[str, object, int]] = []
    if task == 1:
        for theme in math_topics():
            if not theme.judged:
                continue
            for a in answers:
                if a.theme is theme and a.id not in skipped_copy and judge.random() < 0.85:
                    qrels.append((f"A.{theme.number}", a.id, a.grade))
            for a in judge.sample([a for a in answers if a.theme is not None and a.theme.number is None], 4):
                qrels.append((f"A.{theme.number}", a.id, 0))
        files["truth/qrels.tsv"] = _arqmath_qrels(sorted(qrels, key=_topic_sort_key))
        files["truth/exam.jsonl"] = _exam_questions(math_topics())  # EXAM Cover and EXAM qrels
    elif task == 2:
        # docs/formats.md: Task 2 qrels judge visual ids; graded by the formula family of the topic.
        for theme in math_topics():
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
        # docs/formats.md: Task 3 qrels judge per-run answers (ids of our own), 0..3 plus 5 (system
        # failure) and 6 (do not know); answers.tsv holds the assessed texts for lexical overlap.
        texts: list[tuple[int, str, str]] = []
        answer_id = 1
        for theme in math_topics():
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
        files["truth/exam.jsonl"] = _exam_questions(math_topics())
    return files


for _task in (1, 2, 3):
    register(f"arqmath-task{_task}")(lambda task=_task: arqmath_sample(task))
