"""The Touché samples (args.me arguments, topics, relevance and quality qrels)."""

from __future__ import annotations

import random
from typing import Sequence

from sharedtask.samples.builders import ARGSME_FILES, Argument, argsme_json, argsme_record, hex8, xml_text
from sharedtask.samples.registry import register
from sharedtask.samples.themes import DebateTheme, background_debates, debate_topics, spam_premises, words, words_text


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
                    premise = rng.choice(spam_premises())
                else:
                    density = 0.05 + 0.06 * grade if theme.number else 0.12
                    premise = words_text(rng, words("debate"), theme.keywords, density, rng.randint(25, 60) + 6 * grade)
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
            premise=words_text(rng, words("debate"), ("children", "protection", "minister", "justice", "law", "petition"), 0.15, 50),
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
    """docs/formats.md: <topics><topic><number/><title/>[<description/><narrative/>]</topic></topics>."""
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
    topics = debate_topics(year)
    arguments, latent = _touche_arguments(rng, (*topics, *background_debates()))
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
                relevance.append((theme.number, doc_id, grade))  # docs/formats.md: 2020 rel in {-2, 0..5}
            else:
                rel = -2 if grade == -2 else (0, 0, 1, 1, 2, 2)[grade]  # docs/formats.md: 2021 {-2, 0, 1, 2}
                relevance.append((theme.number, doc_id, rel))
                quality.append((theme.number, doc_id, 0 if grade <= 0 else max(0, min(3, grade - rng.randint(1, 2)))))
        for doc_id in rng.sample(background, 4):  # judged non-relevant documents of other debates
            relevance.append((theme.number, doc_id, 0))
            quality.append((theme.number, doc_id, rng.randint(0, 2)))
    files["truth/qrels.txt"] = "".join(f"{q} 0 {d} {r}\n" for q, d, r in sorted(relevance))
    if year == 2021:
        files["truth/qrels-quality.txt"] = "".join(f"{q} 0 {d} {r}\n" for q, d, r in sorted(quality))
    return files


register("touche-2020")(lambda: touche_sample(2020))
register("touche-2021")(lambda: touche_sample(2021))
