"""The paper's result numbers, stored as data in `evals/paper/<table>.json` (the package's
`grse_graph/reproduce/paper`): each table's layout (its rows and columns in the paper's order)
and, for every cell of that layout, the number the paper's text gives, with the line of the
text it comes from, or the reason it is missing (`NOT_IN_TEXT`).

Keys. A row or column key is the paper's label, its groups joined by `|` and a metric after
`:` (`Qwen3.8|multi-hop:f1`, `LoCoMo|Gemma4|GRSE`); `Layout.row_parts` and
`Layout.column_parts` name the groups. Each label also carries the paper's printed wording.

Besides the cells, a table stores the differences the text states between two of its rows
(`+3.1` F1 of GRSE over MASkills) and `excluded`: every other number on a cited line of the
text, with why it is not a cell (a setting, a year, a range whose rows are not named)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grse_graph.errors import ConfigError

from .settings import default_paper_dir, read_paper_file

PaperValue = float | str | None
NOT_IN_TEXT = "not in the paper's text"
"""The reason of a cell of the paper's layout whose number the text does not give."""
PAPER_TABLES = (
    "table1",
    "table2",
    "table3",
    "table4",
    "table5",
    "table6",
    "table9",
    "table10",
    "table11",
)
"""The result tables whose numbers are stored (Tables 7 and 8 are settings: settings.json)."""
NumberField = Literal["value", "sd", "before", "after", "bracket", "subscript"]
NUMBER_FIELDS: tuple[NumberField, ...] = ("value", "sd", "before", "after", "bracket", "subscript")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Label(_Frozen):
    """A row or column: its key (what code looks it up by) and the paper's wording."""

    key: str
    label: str


class Layout(_Frozen):
    """A table's rows and columns in the paper's order; `basis`: where that order comes from
    (the text prints some tables whole; for the others, the caption and the prose)."""

    row_parts: list[str]
    column_parts: list[str]
    rows: list[Label]
    columns: list[Label]
    basis: str

    @model_validator(mode="after")
    def _keys_unique_and_shaped(self) -> Layout:
        for kind, labels, parts in (
            ("row", self.rows, self.row_parts),
            ("column", self.columns, self.column_parts),
        ):
            keys = [label.key for label in labels]
            if len(set(keys)) != len(keys):
                raise ValueError(f"a {kind} key is repeated")
            for key in keys:
                if len(_split_key(key)) > len(parts):
                    raise ValueError(f"{kind} {key!r} has more parts than {parts}")
        return self


def _split_key(key: str) -> list[str]:
    groups, _, metric = key.partition(":")
    return [*groups.split("|"), *([metric] if metric else [])]


class Quote(_Frozen):
    """Another line of the text that prints some of a cell's numbers (`fields`; all of them
    when None)."""

    line: int
    fields: list[NumberField] | None = None


class CellRef(_Frozen):
    """A cell of one of the stored tables."""

    table: str
    row: str
    column: str


class PaperCell(_Frozen):
    """One cell of the paper's layout: a number (with its SD when the text gives one), a
    before -> after pair, a count with a count in brackets, or a text (a fate, with the
    iteration as subscript); or `missing` with the reason. `line`: the line of grse.txt that
    prints it; `copy_of`: the same number as another table's cell (the paper says so)."""

    value: float | None = None
    sd: float | None = None
    before: float | None = None
    after: float | None = None
    bracket: float | None = None
    text: str | None = None
    subscript: int | None = None
    line: int | None = None
    quotes: list[Quote] = Field(default_factory=list)
    copy_of: CellRef | None = None
    missing: str | None = None
    note: str | None = None
    """Our own short remark (how the text was read), never the paper's prose."""

    @model_validator(mode="after")
    def _one_shape(self) -> PaperCell:
        given = [
            f
            for f in ("value", "before", "after", "bracket", "text")
            if getattr(self, f) is not None
        ]
        if self.missing is not None:
            if given:
                raise ValueError(f"a missing cell holds {', '.join(given)}")
        elif not given:
            raise ValueError("a cell needs a number, a text, or `missing` with the reason")
        if (self.before is None) != (self.after is None):
            raise ValueError("before and after come together")
        if self.subscript is not None and self.text is None:
            raise ValueError("a subscript belongs to a text")
        if (given or self.sd is not None) and self.line is None:
            raise ValueError("a number needs the line of the text it comes from")
        return self

    def numbers(self) -> dict[NumberField, float]:
        """The cell's numbers as the paper prints them, by field."""
        found: dict[NumberField, float] = {}
        for name in NUMBER_FIELDS:
            value = getattr(self, name)
            if value is not None:
                found[name] = float(value)
        return found

    @property
    def shown(self) -> PaperValue:
        """The cell as one value: the number, `before→after`, `n (m)`, `fate@iteration`
        (the fate's iteration, as our tables print it); None when missing."""
        if self.before is not None and self.after is not None:
            return f"{self.before:g}→{self.after:g}"
        if self.value is not None and self.bracket is not None:
            return f"{self.value:g} ({self.bracket:g})"
        if self.value is not None:
            return self.value
        if self.text is not None:
            return self.text + (f"@{self.subscript}" if self.subscript is not None else "")
        return None


class Difference(_Frozen):
    """A difference the text states between two rows, in each of `columns` (one printed
    number can cover several columns: `+4.7 F1 and BLEU`): `row` minus `minus` = `value`."""

    row: str
    minus: str
    columns: list[str]
    value: float
    line: int
    also: list[int] = Field(default_factory=list)
    """Other lines that print the same difference."""
    note: str | None = None


class Exclusion(_Frozen):
    """A number on a cited line that is not one of this table's cells or differences, and
    why (one entry per occurrence)."""

    line: int
    number: str
    reason: str


class PaperTable(_Frozen):
    """One table as the paper lays it out, with every number its text gives."""

    table: str
    caption: str
    """Our short description of the table (not the paper's caption)."""
    where: str
    """Where its numbers come from, printed under our table."""
    source: str = "grse.txt"
    layout: Layout
    cells: dict[str, dict[str, PaperCell]]
    differences: list[Difference] = Field(default_factory=list)
    excluded: list[Exclusion] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cells_match_layout(self) -> PaperTable:
        rows = [r.key for r in self.layout.rows]
        columns = [c.key for c in self.layout.columns]
        if list(self.cells) != rows:
            raise ValueError(f"cells' rows {list(self.cells)} are not the layout's {rows}")
        for row, cells in self.cells.items():
            if list(cells) != columns:
                raise ValueError(f"row {row!r}: cells' columns are not the layout's {columns}")
        for difference in self.differences:
            unknown = [k for k in (difference.row, difference.minus) if k not in rows]
            unknown += [k for k in difference.columns if k not in columns]
            if unknown:
                raise ValueError(f"a difference names {unknown}, not in the layout")
        return self

    @property
    def available(self) -> bool:
        """Whether the text gives at least one of its numbers."""
        return any(c.missing is None for cells in self.cells.values() for c in cells.values())

    def cell(self, row: str, column: str) -> PaperCell:
        """The paper's cell; a row or column not in its layout is a `ConfigError`."""
        if row not in self.cells:
            raise ConfigError(f"{self.table}: the paper has no row {row!r}")
        if column not in self.cells[row]:
            raise ConfigError(f"{self.table}: the paper has no column {column!r}")
        return self.cells[row][column]

    def value(self, row: str, column: str) -> PaperValue:
        """The paper's value of one cell (`PaperCell.shown`); None when the text does not
        give it or the paper's table has no such row or column (one of our additions)."""
        cell = self.cells.get(row, {}).get(column)
        return None if cell is None else cell.shown

    def sd(self, row: str, column: str) -> float | None:
        """The SD the text gives for one cell (None: not given, or no such cell)."""
        cell = self.cells.get(row, {}).get(column)
        return None if cell is None else cell.sd

    @property
    def values(self) -> dict[str, dict[str, PaperValue]]:
        """Every cell's value by row and column (None: missing)."""
        return {
            row: {column: cell.shown for column, cell in cells.items()}
            for row, cells in self.cells.items()
        }


def load_paper(table: str, paper_dir: Path | None = None) -> PaperTable:
    """`evals/paper/<table>.json`; a missing or invalid file is one `ConfigError` line."""
    path = (paper_dir or default_paper_dir()) / f"{table}.json"
    paper = read_paper_file(path, PaperTable, "the paper's numbers")
    if paper.table != table:
        raise ConfigError(f"{path}: holds {paper.table!r}, not {table!r}")
    return paper
