"""The run layouts: one table from which the readers, the validator, the evaluator and the
task schema's list of run formats derive (docs/formats.md, "Runs").

A layout says where each field sits in a line. ``name`` is the run format as task specs
name it (``output.format``); ``short`` is the layout name of the streaming readers and
writers (``sharedtask.formats.read_run(path, layout=...)``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layout:
    name: str
    short: str
    columns: tuple[str, ...]
    sep: str | None  # None: any whitespace (TREC); "\t": tab separated (ARQMath)
    maxsplit: int  # -1, or 5 for Task 3 whose last column (the answer) holds spaces
    topic: int
    doc: int | None  # the key that must be unique per topic (docno / post id / formula id)
    rank: int
    score: int
    tag: int
    q0: int | None = None
    post: int | None = None  # Task 2: the post holding the formula
    answer: int | None = None  # Task 3
    sources: int | None = None  # Task 3
    tira_compatible: bool = True  # can TIRA's run.txt check accept this layout at all?
    title: str = "a TREC run"

    def describe(self) -> str:
        """For messages: "an ARQMath Task 1 run (Topic_Id Post_Id Rank Score Run_Tag)"."""
        return f"{self.title} ({self.column_text()})"

    @property
    def ncol(self) -> int:
        return len(self.columns)

    def column_text(self) -> str:
        return " ".join(self.columns)


TREC = Layout("trec-run", "trec", ("qid", "Q0", "docno", "rank", "score", "tag"), None, -1, 0, 2, 3, 4, 5, q0=1)
ARQ1 = Layout(
    "arqmath-task1-run", "arqmath-task1", ("Topic_Id", "Post_Id", "Rank", "Score", "Run_Tag"), "\t", -1,
    0, 1, 2, 3, 4,
    tira_compatible=False,  # TIRA's check demands exactly 6 columns
    title="an ARQMath Task 1 run",
)
#: Lenient variant of Task 1 (docs/formats.md): TREC with Q0, accepted by the official scripts.
ARQ1_TREC = Layout(
    "arqmath-task1-run (6-column TREC variant)", "arqmath-task1",
    ("Topic_Id", "Q0", "Post_Id", "Rank", "Score", "Run_Tag"), "\t", -1, 0, 2, 3, 4, 5, q0=1,
    title="an ARQMath Task 1 run",
)
ARQ2 = Layout(
    "arqmath-task2-run", "arqmath-task2", ("Topic_Id", "Formula_Id", "Post_Id", "Rank", "Score", "Run_Tag"),
    "\t", -1, 0, 1, 3, 4, 5, post=2, title="an ARQMath Task 2 run",
)
ARQ3 = Layout(
    "arqmath-task3-run", "arqmath-task3", ("Topic_Id", "Rank", "Score", "Run_Tag", "Sources", "Answer"),
    "\t", 5, 0, None, 1, 2, 3, sources=4, answer=5,
    tira_compatible=False,  # the answer holds spaces and column 4 is the tag, not an integer rank
    title="an ARQMath Task 3 run",
)

#: Every run format a task spec may name, by that name.
RUN_LAYOUTS: dict[str, Layout] = {layout.name: layout for layout in (TREC, ARQ1, ARQ2, ARQ3)}

#: The same layouts by the readers' short name.
BY_SHORT: dict[str, Layout] = {layout.short: layout for layout in RUN_LAYOUTS.values()}
