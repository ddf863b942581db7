"""The catalogue of finding codes covers every code the code base reports, and docs/findings.md is its rendering."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sharedtask.findings.codes import CATALOGUE, markdown
from sharedtask.findings import Severity
from sharedtask.validate.model import Collector

REPO = Path(__file__).resolve().parent.parent
CODE = re.compile(r"\"((?:RUN|INPUT)-[A-Z0-9]+(?:-[A-Z0-9]+)*)\"")


def test_every_code_in_the_sources_is_catalogued() -> None:
    used = {m.group(1) for p in (REPO / "src" / "sharedtask").rglob("*.py") for m in CODE.finditer(p.read_text())}
    assert len(used) > 50  # the scan itself works
    assert sorted(used - set(CATALOGUE)) == []


def test_every_catalogued_code_has_a_meaning_and_a_hint() -> None:
    for name, entry in CATALOGUE.items():
        assert entry.meaning and entry.hint and isinstance(entry.severity, Severity), name


def test_docs_findings_is_the_rendered_catalogue() -> None:
    assert (REPO / "docs" / "findings.md").read_text() == markdown(), \
        "run: python -m sharedtask.findings.codes > docs/findings.md"


def test_report_takes_severity_and_hint_from_the_catalogue_and_caps_lazily() -> None:
    out = Collector("run.txt", limit=1)
    built: list[int] = []

    def message() -> str:
        built.append(1)
        return "blank line"

    out.report("RUN-BLANK-LINE", message, 3)
    out.report("RUN-BLANK-LINE", message, 4)
    (only,) = out.findings
    assert (only.severity, only.hint, only.line) == (Severity.ERROR, CATALOGUE["RUN-BLANK-LINE"].hint, 3)
    assert built == [1] and out.omitted["RUN-BLANK-LINE"] == 1 and out.has_errors
    out.report("RUN-RANK-DUPLICATE", "x", severity=Severity.ERROR, hint="own hint")
    assert out.findings[-1].severity is Severity.ERROR and out.findings[-1].hint == "own hint"


def test_an_unknown_code_is_refused_by_name() -> None:
    with pytest.raises(KeyError, match="RUN-NOPE"):
        Collector("run.txt").report("RUN-NOPE", "x")
