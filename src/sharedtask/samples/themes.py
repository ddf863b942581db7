"""Theme data of the samples (``themes/*.yml``) as typed records.

The subjects, vocabularies and formula families are data, kept beside this module in
YAML; changing a value changes the generated sample bytes (``tests/test_samples.py``
compares the regenerated samples with the checked-in ones).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Sequence

import yaml

_HERE = Path(__file__).resolve().parent / "themes"


@cache
def _load(name: str) -> Any:
    with open(_HERE / f"{name}.yml", encoding="utf-8") as f:
        return yaml.safe_load(f)


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


def _debate(entry: dict[str, Any]) -> DebateTheme:
    return DebateTheme(entry["number"], entry["title"], entry.get("description", ""), entry.get("narrative", ""),
                       tuple(entry["claims"]), tuple(entry["keywords"].split()), entry.get("size", 24),
                       entry.get("judged", True), entry.get("grade_bias", 0.0))


def _math(entry: dict[str, Any]) -> MathTheme:
    return MathTheme(entry["number"], entry["title"], entry["question"], tuple(entry["tags"]),
                     tuple(entry["keywords"].split()), tuple((tex, rel) for tex, rel in entry["formulas"]),
                     entry.get("query_formula", 0), entry.get("threads", 6), entry.get("judged", True),
                     entry.get("grade_bias", 0.0))


@cache
def debate_topics(year: int) -> tuple[DebateTheme, ...]:
    """The judged (and one unjudged) debate subjects of the Touché ``year`` sample."""
    return tuple(_debate(e) for e in _load("debates")[f"touche-{year}"])


@cache
def background_debates() -> tuple[DebateTheme, ...]:
    return tuple(_debate(e) for e in _load("debates")["background"])


def spam_premises() -> tuple[str, ...]:
    return tuple(_load("debates")["spam_premises"])


@cache
def math_topics() -> tuple[MathTheme, ...]:
    return tuple(_math(e) for e in _load("math")["topics"])


@cache
def math_background() -> tuple[MathTheme, ...]:
    return tuple(_math(e) for e in _load("math")["background"])


@cache
def words(kind: str) -> tuple[str, ...]:
    """A background vocabulary: ``debate`` or ``math``."""
    return tuple(_load("words")[kind].split())


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
