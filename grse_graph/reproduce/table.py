"""A result table: cells of our numbers over seeds (mean ± SD) with the paper's number beside
each, rendered as Markdown laid out like the paper and written with its JSON. A cell without a
value is FAILED with the reason, never 0, unless it was not run because of the smoke size: such
a cell says so and the table's header lists it (`ResultTable.not_run_line`)."""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from grse_graph.durable import atomic_write_text

from .outcome import RunFailure, RunOutcome
from .paper import PaperValue

Result = RunOutcome | RunFailure
FAILURE_CHARS = 90
"""A FAILED cell's reason is cut to this; the full errors are listed under the table."""
NOT_RUN_AT_SIZE = "not run at the smoke size"
"""What a cell that the smoke size does not run shows; the header lists every such cell."""
Metric = Callable[[RunOutcome], float | None]


class Cell(BaseModel):
    """One cell: our values (one per finished run), the failures of the runs that did not
    give one, or a text value (a fate, a count), and the paper's value."""

    values: list[float] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    text: str | None = None
    paper: PaperValue = None
    digits: int = 1
    signed: bool = False
    """Print a sign on our value and the paper's (`+0.7`): a change, as the paper prints it."""
    not_run: str | None = None
    """Why the cell has no run at this size (the smoke size); it is not a failure then, and
    the table's header lists it. A table built at the full size has no such cell."""

    @classmethod
    def skipped_at_size(cls, paper: PaperValue = None) -> Cell:
        """A cell the smoke size does not run (listed in the header, never a silent zero)."""
        return cls(not_run=NOT_RUN_AT_SIZE, paper=paper)

    @property
    def failed(self) -> bool:
        """No value at all and not skipped for the size: the cell shows FAILED."""
        return self.text is None and not self.values and self.not_run is None

    @property
    def mean(self) -> float | None:
        return statistics.fmean(self.values) if self.values else None

    @property
    def sd(self) -> float | None:
        """Sample standard deviation over runs (None below two runs)."""
        return statistics.stdev(self.values) if len(self.values) > 1 else None

    def ours(self) -> str:
        """Our value as printed: `mean ± SD` over runs, a text, or FAILED with the reason."""
        if self.text is not None:
            return self.text
        if self.not_run is not None and not self.values:
            return self.not_run
        if not self.values:
            reason = self.failures[0] if self.failures else "no run produced this cell"
            short = reason if len(reason) <= FAILURE_CHARS else reason[: FAILURE_CHARS - 3] + "..."
            return f"FAILED ({short})"
        shown = f"{self.mean:{'+' if self.signed else ''}.{self.digits}f}"
        if self.sd is not None:
            shown += f" ± {self.sd:.{self.digits}f}"
        runs = len(self.values) + len(self.failures)
        if runs > 1 or self.failures:
            shown += f" (n={len(self.values)}"
            shown += f", {len(self.failures)} failed)" if self.failures else ")"
        return shown

    def paper_text(self) -> str:
        """The paper's value, or n/a where it is not available to us."""
        if self.paper is None:
            return "n/a"
        if isinstance(self.paper, (int, float)):
            if self.signed:
                return f"{self.paper:+.{self.digits}f}"
            return (
                f"{self.paper:.{self.digits}f}"
                if self.paper != int(self.paper)
                else f"{self.paper:g}"
            )
        return str(self.paper)


class NotMeasured(Exception):
    """Raised by a metric to say why a finished run has no value for a cell."""


class OutsideTestSize(NotMeasured):
    """The run's test questions hold none of what the cell measures (a category): at the
    smoke size's few test questions the cell is not run; at any other size, a failure."""


def measured(result: Result, metric: Metric) -> float:
    """`metric` of one run; `NotMeasured` (an `OutsideTestSize` stays one) naming the run and
    why it has no value: its error, the metric's reason, or that it did not measure this."""
    if isinstance(result, RunFailure):
        raise NotMeasured(f"run {result.run_id}: {result.error}")
    try:
        value = metric(result)
    except NotMeasured as reason:
        raise type(reason)(f"run {result.run_id}: {reason}") from None
    if value is None:
        raise NotMeasured(f"run {result.run_id} did not measure this")
    return value


def seed_result(results: Sequence[Result], position: int) -> Result:
    """The run of one seed position among a part's runs; a part with fewer runs than the
    others (a greedy run that does not depend on the seed) gives its last for every seed."""
    return results[min(position, len(results) - 1)]


def collect(
    results: Sequence[Result], metric: Metric, *, paper: PaperValue = None, digits: int = 1
) -> Cell:
    """A cell over runs: each finished run's `metric` (None, or `NotMeasured` with the reason:
    the run did not measure it, a failure of the cell), each failed run's error."""
    cell = Cell(paper=paper, digits=digits)
    if not results:
        cell.failures.append("no run was planned for this cell")
    outside = 0
    for result in results:
        try:
            cell.values.append(measured(result, metric))
        except NotMeasured as reason:
            cell.failures.append(str(reason))
            outside += isinstance(reason, OutsideTestSize)
    if results and outside == len(results):
        cell.not_run = NOT_RUN_AT_SIZE  # the table turns it into a failure outside smoke
    return cell


class Column(BaseModel):
    """A column: its key (the paper's column key, `evals/paper/<table>.json`), its label,
    whether it is one of the paper's columns (its value printed beside ours) or ours only, and
    the actor that made our values when it is not the one the label names (a paper column
    filled by another model, e.g. the embedded one)."""

    key: str
    label: str
    paper: bool = True
    actor: str | None = None

    def ours_label(self) -> str:
        """The header of our values: `label (ours)`, naming our actor when there is one."""
        if not self.paper:
            return self.label
        return f"{self.label} (ours, {self.actor})" if self.actor else f"{self.label} (ours)"


class Row(BaseModel):
    """A row: its label, the paper's row key it sits beside (None: a row of ours that the
    paper's table does not have) and its cells by column key."""

    label: str
    cells: dict[str, Cell]
    key: str | None = None


@dataclass(frozen=True)
class TableContent:
    """What a table definition builds of one result table: its columns and rows, the notes and
    figures under it and header lines of its own (every table is headed by its deviations)."""

    columns: list[Column]
    rows: list[Row]
    notes: Sequence[str] = ()
    figures: Sequence[str] = ()
    header: Sequence[str] = ()


class ResultTable(BaseModel):
    """A reproduced table with everything its Markdown shows."""

    table: str
    title: str
    header: list[str] = Field(default_factory=list)
    """Lines printed above the table: sizes, mode, every deviation from the paper."""
    columns: list[Column]
    rows: list[Row]
    paper_where: str
    notes: list[str] = Field(default_factory=list)
    figures: list[str] = Field(default_factory=list)

    def cell(self, row: Row, column: Column) -> Cell:
        """The cell of `row` in `column`; a column the row has no cell for is a failure."""
        return row.cells.get(column.key) or Cell(failures=["no run produced this cell"])

    def failed_cells(self) -> list[tuple[str, str]]:
        """(row, column key) of every FAILED cell: every unfilled cell that is not listed as
        not run at the smoke size, a column without a cell included."""
        return [
            (row.label, column.key)
            for row in self.rows
            for column in self.columns
            if self.cell(row, column).failed
        ]

    def not_run_cells(self) -> list[tuple[str, str]]:
        """(row, column label) of every cell not run at the smoke size."""
        return [
            (row.label, column.label)
            for row in self.rows
            for column in self.columns
            if self.cell(row, column).not_run is not None and not self.cell(row, column).values
        ]

    def not_run_line(self) -> str | None:
        """The header line listing the cells not run at the smoke size, row by row (a row
        none of whose cells ran: `row (every column)`); None when every cell ran."""
        skipped = self.not_run_cells()
        if not skipped:
            return None
        by_row: dict[str, list[str]] = {}
        for row, column in skipped:
            by_row.setdefault(row, []).append(column)
        parts = [
            f"{row} (every column)"
            if len(columns) == len(self.columns)
            else f"{row}: {', '.join(columns)}"
            for row, columns in by_row.items()
        ]
        return f"{NOT_RUN_AT_SIZE}: {len(skipped)} cell(s): " + "; ".join(parts)


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(table: ResultTable) -> str:
    """The table as Markdown: header lines, then per column our value and the paper's."""
    lines = [f"# {table.title}", ""]
    lines += [f"- {_escape(line)}" for line in table.header]
    lines += ["", f"Paper numbers: {_escape(table.paper_where)}", ""]
    head = ["row"]
    for column in table.columns:
        head.append(column.ours_label())
        if column.paper:
            head.append(f"{column.label} (paper)")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |")
    for row in table.rows:
        cells = [_escape(row.label)]
        for column in table.columns:
            cell = table.cell(row, column)
            cells.append(_escape(cell.ours()))
            if column.paper:
                cells.append(_escape(cell.paper_text()))
        lines.append("| " + " | ".join(cells) + " |")
    failed = table.failed_cells()
    lines += ["", f"Cells marked FAILED: {len(failed)}."]
    reasons = dict.fromkeys(
        reason
        for row in table.rows
        for column in table.columns
        for reason in table.cell(row, column).failures
    )
    lines += [f"- failure: {_escape(reason)}" for reason in reasons]
    lines += [f"- {_escape(note)}" for note in table.notes]
    lines += [f"![{Path(f).stem}]({Path(f).name})" for f in table.figures]
    return "\n".join(lines) + "\n"


def table_json(table: ResultTable) -> dict[str, object]:
    """The JSON document of a table: every cell with its values, mean, SD and paper value."""
    document = table.model_dump(mode="json")
    for row, dumped in zip(table.rows, document["rows"], strict=True):
        for column in table.columns:
            cell = table.cell(row, column)
            dumped["cells"][column.key] = {
                **cell.model_dump(mode="json"),
                "mean": cell.mean,
                "sd": cell.sd,
                "failed": cell.failed,
                "ours": cell.ours(),
            }
    return document


def write_table(table: ResultTable, out: Path) -> tuple[Path, Path]:
    """`out/<table>.md` and `out/<table>.json`."""
    out.mkdir(parents=True, exist_ok=True)
    md, js = out / f"{table.table}.md", out / f"{table.table}.json"
    atomic_write_text(md, render_markdown(table))
    atomic_write_text(js, json.dumps(table_json(table), indent=2) + "\n")
    return md, js
