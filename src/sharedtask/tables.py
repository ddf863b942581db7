"""Terminal tables whose identifying column (a run, task, file or image name) is never cut.

Why: rich shrinks every column of a table wider than the terminal, and the widest cell, the
name that tells two rows apart, was the one cut ("lucene…" for two different runs at 80
columns, field test of issue 40). A :class:`KeyedTable` decides when it is drawn, at the
width it gets: the usual table with the key column whole when the other columns still have
room (numbers whole, text wrapped at word breaks), else a stacked layout, one block per row:
the key on a line of its own, then each other column as ``header  value`` beneath it.
rich is imported on first render only (``--json`` never loads it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator

#: narrowest width a wrapped text column may get in the table layout; below it, stack
TEXT_MIN = 12


@dataclass
class Column:
    header: str
    justify: str = "left"
    #: a number or a short code: kept on one line, never wrapped
    whole: bool = False


@dataclass
class KeyedTable:
    """A table whose column ``key`` is shown whole at any width (see the module's docstring)."""

    columns: list[Column]
    key: int = 0
    title: str | None = None
    caption: str | None = None
    title_justify: str = "center"
    rows: list[tuple[str, ...]] = field(default_factory=list)
    styles: list[str | None] = field(default_factory=list)
    #: rows that have a note instead of values (a run that failed: why), drawn after the key
    notes: list[tuple[tuple[str, ...], str]] = field(default_factory=list)

    def add_row(self, *cells: Any, style: str | None = None) -> None:
        cells = tuple("" if c is None else str(c) for c in cells)
        self.rows.append(cells + ("",) * (len(self.columns) - len(cells)))
        self.styles.append(style)

    def add_note(self, *lead: Any, note: str) -> None:
        """A row with the cells up to the key and a note in place of the other columns."""
        self.notes.append((tuple("" if c is None else str(c) for c in lead), note))

    # ------------------------------------------------------------------ layout

    def fits(self, width: int) -> bool:
        """Whether the table layout keeps the key whole and leaves the others their room:
        numbers and codes whole (a header wraps at its spaces), text at least TEXT_MIN wide."""
        need = 3 * len(self.columns) + 1  # borders and one space of padding each side
        for i, col in enumerate(self.columns):
            if i == self.key or col.whole:  # notes go under the table: not counted
                need += max(_value_width(self.rows, i), _longest_word(col.header))
            else:
                need += min(max(_value_width(self.rows, i), len(col.header)), TEXT_MIN)
        return need <= width

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Any]:
        if self.fits(options.max_width):
            yield self._table(options.max_width)
            if self.notes:
                yield self._notes()
        else:
            yield from self._stacked(options.max_width)

    def __rich_measure__(self, console: Any, options: Any) -> Any:
        from rich.measure import Measurement

        return Measurement(1, options.max_width)

    def _table(self, width: int) -> Any:
        from rich.table import Table

        # Headers whole when everything fits at its natural width; else numbers and codes keep
        # their width and their headers wrap at spaces, so rich cannot squeeze a word apart.
        natural = 3 * len(self.columns) + 1 + sum(max(_value_width(self.rows, i), len(c.header))
                                                  for i, c in enumerate(self.columns))
        tight = natural > width

        table = Table(title=self.title, caption=self.caption, title_justify=self.title_justify)  # type: ignore[arg-type]
        for i, col in enumerate(self.columns):
            if i == self.key or col.whole:
                need = max(_value_width(self.rows, i), _longest_word(col.header))
                # a fixed width when tight: rich shrinks the widest wrappable column first, and
                # a whole column (a min_width, but no fixed width) was picked, clamped back and the
                # table left wider than the terminal, its last column cut (`sample` at 80 columns)
                table.add_column(col.header, justify=col.justify, no_wrap=i == self.key,  # type: ignore[arg-type]
                                 min_width=need, width=need if tight and i != self.key else None)
            else:  # at least what fits() gave it, so a short word ("identical") is never folded
                need = min(max(_value_width(self.rows, i), _longest_word(col.header)), TEXT_MIN)
                table.add_column(col.header, justify=col.justify, overflow="fold",  # type: ignore[arg-type]
                                 min_width=need)
        for row, style in zip(self.rows, self.styles):
            table.add_row(*row, style=style)
        return table

    def _notes(self) -> Any:
        """Rows without values, under the table: the key whole, the note wrapping beside it
        (in a score column it stood one word a line)."""
        from rich.table import Table

        grid = Table.grid(padding=(0, 2))
        grid.add_column(no_wrap=True)
        grid.add_column()
        for lead, note in self.notes:
            grid.add_row("  ".join(c for c in lead[: self.key + 1] if c), note)
        return grid

    def _stacked(self, width: int) -> Iterator[Any]:
        from rich.table import Table
        from rich.text import Text

        if self.title:
            yield Text.from_markup(f"[italic]{self.title}[/]", justify="left")
        others = [i for i in range(self.key + 1, len(self.columns))]  # the ones before lead the key's line
        for row, style in zip(self.rows, self.styles):
            lead = "  ".join(row[i] for i in range(self.key) if row[i])
            yield Text.from_markup((f"{lead}  " if lead else "") + f"[bold]{row[self.key]}[/]", style=style or "")
            grid = Table.grid(padding=(0, 2), pad_edge=False)
            grid.add_column(no_wrap=False, style="dim")
            grid.add_column(overflow="fold")
            for i in others:
                if row[i]:
                    grid.add_row(f"  {self.columns[i].header}", row[i])
            yield grid
        for lead, note in self.notes:
            first = "  ".join(c for c in lead[: self.key] if c)
            yield Text.from_markup((f"{first}  " if first else "") + f"[bold]{lead[self.key]}[/]")
            yield Text.from_markup(f"  {note}")
        if self.caption:
            yield Text.from_markup(f"[dim]{self.caption}[/]")


def _value_width(rows: list[tuple[str, ...]], i: int) -> int:
    from rich.text import Text

    return max([max((Text.from_markup(line).cell_len for line in r[i].split("\n")), default=0)
                for r in rows if i < len(r)] or [0])


def _longest_word(text: str) -> int:
    return max((len(w) for w in text.split()), default=0)
