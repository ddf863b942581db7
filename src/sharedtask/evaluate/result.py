"""What an evaluation returns: scores, per-topic values, the procedures followed, notes."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class MeasureInfo:
    """One measure as computed: its result key, the spec's id, label, procedure and qrels role.

    ``key`` is unique within a task: the spec id, with ``_<qrels_role>`` appended when the
    same id is declared for several qrels roles and this one is not ``relevance``
    (Touché 2021: ``ndcg5_official`` and ``ndcg5_official_quality``).
    """

    key: str
    id: str
    label: str
    procedure: str
    qrels_role: str
    primary: bool = False
    official: bool = True
    averaging: str = ""  # how topics are averaged (which topics count, what a missing topic scores)
    source: str = ""  # the official script, paper or tool the procedure follows
    description: str = ""  # what is computed (from the measure registry)


@dataclass
class EvaluationResult:
    """Scores of one run for one task.

    ``scores[key]`` is the mean; ``per_topic[key][topic]`` the values that went into it
    (filled when asked for with ``per_topic=True``; the leaderboard's significance test
    needs them); ``topics_averaged[key]`` the number of topics in the mean.
    """

    task: str
    run: str
    measures: list[MeasureInfo]
    scores: dict[str, float] = field(default_factory=dict)
    per_topic: dict[str, dict[str, float]] = field(default_factory=dict)
    topics_averaged: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def primary(self) -> MeasureInfo:
        for info in self.measures:
            if info.primary:
                return info
        return self.measures[0]

    def measure(self, key: str) -> MeasureInfo:
        for info in self.measures:
            if info.key == key:
                return info
        raise KeyError(key)

    def to_json(self) -> dict[str, Any]:
        def clean(x: float) -> float | None:
            return None if isinstance(x, float) and math.isnan(x) else x

        return {
            "task": self.task,
            "run": self.run,
            "primary_measure": self.primary.key if self.measures else None,
            "measures": [asdict(m) for m in self.measures],
            "scores": {k: clean(v) for k, v in self.scores.items()},
            "topics_averaged": dict(self.topics_averaged),
            "per_topic": {k: {t: clean(v) for t, v in d.items()} for k, d in self.per_topic.items()},
            "notes": list(self.notes),
        }
