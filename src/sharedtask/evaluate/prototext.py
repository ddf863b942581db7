"""TIRA evaluator output: ``evaluation.prototext``.

TIRA reads an evaluator's result as protobuf text format, one block per measure::

    measure {
      key: "nDCG′"
      value: "0.4521"
    }

TIRA's parsers (``tira.io_utils.parse_prototext_key_values`` and
``load_output_of_directory``) split lines on ``:`` and on ``"`` and the file on the
word ``measure``, so keys must contain none of these; we write the measure labels
with such characters replaced.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from sharedtask.evaluate.result import EvaluationResult

_UNSAFE = re.compile(r'[:"\\\n\r]|measure|value|key', re.IGNORECASE)


def safe_key(text: str) -> str:
    """A key TIRA's line-based parsers read back unchanged."""
    return _UNSAFE.sub(" ", text).strip()


def to_prototext(result: EvaluationResult) -> str:
    """The evaluation as TIRA prototext: one ``measure`` block per computed measure (NaN left out)."""
    labels = [safe_key(m.label) for m in result.measures]
    if len(set(labels)) != len(labels):  # labels must identify the measure: fall back to keys
        labels = [safe_key(m.key) for m in result.measures]
    blocks = []
    for info, key in zip(result.measures, labels):
        value = result.scores.get(info.key)
        if value is None or math.isnan(value):
            continue
        blocks.append(f'measure {{\n  key: "{key}"\n  value: "{value:.10g}"\n}}\n')
    return "".join(blocks)


def write_prototext(result: EvaluationResult, output_dir: Path) -> Path:
    """Write ``output_dir/evaluation.prototext`` and return its path."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "evaluation.prototext"
    path.write_text(to_prototext(result), encoding="utf-8")
    return path
