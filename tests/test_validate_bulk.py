"""The batched checks of the validator's fast paths agree with checking value by value.

``bulk_fullmatch`` decides for a whole column at once; it may only say True when every
single value fully matches (else findings would be lost). Expected answers come from
``re.fullmatch`` per value, not from the code under test.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from sharedtask.validate.fields import _class_checker, _may_match_newline, bulk_fullmatch

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


_ID = "S0123abcd-A89ef4567"
_mutated_ids = st.lists(
    st.one_of(
        st.just(_ID),
        st.builds(lambda k, c: _ID[:k] + c + _ID[k + 1 :], st.integers(0, 18), st.sampled_from("0fFgSA-_ é\t")),
        st.builds(lambda k: _ID[:k] + _ID[k + 1 :], st.integers(0, 18)),
        st.builds(lambda k, c: _ID[:k] + c + _ID[k:], st.integers(0, 19), st.sampled_from("0a-")),
    ),
    max_size=6,
)


@settings(max_examples=400, deadline=None)
@given(pattern=st.sampled_from([r"S[0-9a-f]{8}-A[0-9a-f]{8}", r"S[0-9a-f]{8}-A[0-9a-f]{4}\d{4}", r"[S]\S{18}"]),
       values=_mutated_ids)
def test_fixed_length_ids_equal_per_value(pattern: str, values: list[str]) -> None:
    compiled = re.compile(pattern, re.ASCII)
    assert bulk_fullmatch(compiled, values) == all(compiled.fullmatch(v) is not None for v in values)


def test_fixed_length_ids_cannot_borrow_characters_from_a_neighbour() -> None:
    # Concatenated, the two wrong ids read as two valid ones: only the separator tells.
    pattern = re.compile(r"S[0-9a-f]{8}-A[0-9a-f]{8}", re.ASCII)
    assert bulk_fullmatch(pattern, [_ID[:-1], _ID[-1] + _ID]) is False
    assert bulk_fullmatch(pattern, [_ID, _ID]) is True


def test_class_checker_takes_only_fixed_ascii_class_sequences() -> None:
    taken = [r"S[0-9a-f]{8}-A[0-9a-f]{8}", r"[0-9]{3}", r"a|b", r"\d\d"]
    left = [r"[0-9]+", r"[1-9][0-9]*", r"[a-c][b-d]", r"(?i)abc", r"[^\t]*", r"é", r"\S{3}", r"a(b)"]
    assert [p for p in taken if _class_checker(re.compile(p, re.ASCII)) is None] == []
    assert [p for p in left if _class_checker(re.compile(p, re.ASCII)) is not None] == []


def test_newline_analysis_is_conservative() -> None:
    safe = [r"S[0-9a-f]{8}-A[0-9a-f]{8}", r"[1-9][0-9]*", r"[A-Za-z0-9_.+-]{1,100}", r"\S+", r".+", r"[^\n,]"]
    unsafe = [r"[^,]+", r"\s", r"\D", r"\W", r"(?s).", r"(?s:.)x", r"a(?=\n)", r"(a)\1", "[\x00-\x20]", r"\n"]
    assert [p for p in safe if _may_match_newline(re.compile(p, re.ASCII))] == []
    assert [p for p in unsafe if not _may_match_newline(re.compile(p, re.ASCII))] == []


def test_lookahead_across_values_is_not_trusted() -> None:
    # Joined as "a\nb\n", "a(?=\n)" would match the first value; alone, "a" fails it.
    pattern = re.compile(r"a(?=\n)|b", re.ASCII)
    assert bulk_fullmatch(pattern, ["a", "b"]) is False


# ----------------------------------------------------------------------------- ties

_score_texts = st.lists(
    st.sampled_from(["9", "8.5", "8.50000001", "8.5000001", "8.500001", "7", "7", "340282350000000000000000000000000000000",
                     "350000000000000000000000000000000000000", "1000000000000000000000000000000000000000", "0", "-0", "-2.25", "-2.2500000001"]),
    min_size=5,
    max_size=12,
)


@settings(max_examples=200, deadline=None)
@given(texts=_score_texts)
def test_tie_groups_of_a_sorted_topic(tmp_path_factory: object, texts: list[str]) -> None:
    """RUN-TIE / RUN-FLOAT32-TIE lines equal groups of equal neighbours, computed here with struct."""
    import struct
    from itertools import groupby
    from pathlib import Path

    from sharedtask.spec import load_task
    from sharedtask.validate import validate

    texts = sorted(texts, key=float, reverse=True)
    lines = [f"{t} Q0 S{k:08x}-A{k:08x} {k + 1} {s} tag" for t in (1, 2, 3) for k, s in enumerate(texts)]
    path = Path(tmp_path_factory.mktemp("ties")) / "run.txt"  # type: ignore[attr-defined]
    path.write_text("\n".join(lines) + "\n")
    result = validate(path, load_task("touche-2021-task1"))

    def f32(v: float) -> float:
        try:
            return struct.unpack("f", struct.pack("f", v))[0]
        except OverflowError:  # struct refuses what a C cast turns into inf
            return float("inf") if v > 0 else float("-inf")

    values = [float(t) for t in texts]
    expected_tie: list[int] = []
    expected_32: list[int] = []
    for key in (lambda k: values[k], lambda k: f32(values[k])):
        for _, grp in groupby(range(len(values)), key=key):
            members = list(grp)
            if len(members) < 2:
                continue
            distinct64 = {values[k] for k in members}
            # f64 groups: all members equal as doubles; f32 groups: some members differ as doubles
            (expected_tie if len(distinct64) == 1 else expected_32).append(members[0])
    # An f64 group is also an f32 group (found twice above): keep one RUN-TIE per f64 group.
    expected_tie = sorted(set(expected_tie))
    got_tie = sorted({f.line for f in result.findings if f.code == "RUN-TIE"})
    got_32 = sorted({f.line for f in result.findings if f.code == "RUN-FLOAT32-TIE"})
    n = len(texts)
    assert got_tie == sorted({t * n + k + 1 for t in range(3) for k in expected_tie})
    assert got_32 == sorted({t * n + k + 1 for t in range(3) for k in set(expected_32)})


# ------------------------------------------------------------------ chunk boundaries

def test_separator_counts_do_not_depend_on_chunk_size(tmp_path: object, monkeypatch: object) -> None:
    """RUN-MIXED-SEPARATORS counts lines with tabs / spaces the same wherever chunks are cut.

    By hand: lines 1 and 4 use spaces, line 3 tabs, line 2 is blank (counts for neither);
    the finding points at the later of the first tab line (3) and the first space line (1).
    """
    from pathlib import Path

    import pytest

    from sharedtask.spec import load_task
    from sharedtask.validate import structure, validate

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    path = Path(str(tmp_path)) / "run.txt"
    rows = [f"1 Q0 {_ID} 1 3 t", "", "1\tQ0\tS0123abcd-A89ef4568\t2\t2\tt", "1 Q0 S0123abcd-A89ef4569 3 1 t"]
    path.write_bytes("\r\n".join(rows + [""]).encode())
    seen = []
    for size in (7, 40, 1 << 22):
        monkeypatch.setattr(structure, "CHUNK", size)
        found = [f for f in validate(path, load_task("touche-2021-task1")).findings if f.code == "RUN-MIXED-SEPARATORS"]
        seen.append([(f.line, f.message) for f in found])
    expected = [(3, "columns are separated inconsistently: 1 line(s) with tabs, 2 with spaces, 0 with both")]
    assert seen == [expected] * 3
