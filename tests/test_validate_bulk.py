"""The batched checks of the validator's fast paths agree with checking value by value.

``bulk_fullmatch`` decides for a whole column at once; it may only say True when every
single value fully matches (else findings would be lost). Expected answers come from
``re.fullmatch`` per value, not from the code under test.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sharedtask.validate.fields import _may_match_newline, bulk_fullmatch

# The task patterns (tasks/_base/*.yml) and patterns that can match a newline or look around,
# for which the possessive shortcut must not be used.
PATTERNS = [
    r"S[0-9a-f]{8}-A[0-9a-f]{8}",
    r"[1-9][0-9]*",
    r"[A-Za-z0-9_.+-]{1,100}",
    r"A\.[0-9]+|B\.[0-9]+",
    r"[0-9]+",
    r"[^,]+",
    r"a(?=\n)|b",
    r"\s*a",
    r"(?s:.)+",
    r"\D+",
    r"(a|ab)(c|bcd)",
    r"x?",
]

_values = st.lists(st.text(alphabet="ab0129fS-AxK.,\t ", max_size=12), max_size=8)


@settings(max_examples=400, deadline=None)
@given(pattern=st.sampled_from(PATTERNS), values=_values)
def test_bulk_fullmatch_equals_per_value(pattern: str, values: list[str]) -> None:
    compiled = re.compile(pattern, re.ASCII)
    assert bulk_fullmatch(compiled, values) == all(compiled.fullmatch(v) is not None for v in values)


def test_newline_analysis_is_conservative() -> None:
    safe = [r"S[0-9a-f]{8}-A[0-9a-f]{8}", r"[1-9][0-9]*", r"[A-Za-z0-9_.+-]{1,100}", r"\S+", r".+", r"[^\n,]"]
    unsafe = [r"[^,]+", r"\s", r"\D", r"\W", r"(?s).", r"(?s:.)x", r"a(?=\n)", r"(a)\1", "[\x00-\x20]", r"\n"]
    assert [p for p in safe if _may_match_newline(re.compile(p, re.ASCII))] == []
    assert [p for p in unsafe if not _may_match_newline(re.compile(p, re.ASCII))] == []


def test_lookahead_across_values_is_not_trusted() -> None:
    # Joined as "a\nb\n", "a(?=\n)" would match the first value; alone, "a" fails it.
    pattern = re.compile(r"a(?=\n)|b", re.ASCII)
    assert bulk_fullmatch(pattern, ["a", "b"]) is False
