"""What a table definition is, and the helpers every table uses to read outcomes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.deviations import deviations
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import PaperTable
from grse_graph.reproduce.table import (
    Cell,
    Metric,
    NotMeasured,
    ResultTable,
    TableContent,
    collect,
)

Result = RunOutcome | RunFailure
Layout = dict[str, dict[str, list[RunSpec]]]
"""Row label -> column group (an actor, a category) -> the runs of that cell (one per seed)."""


@dataclass(frozen=True)
class TableDef:
    """A paper table: its name (`table1`), script, result tables, what it reproduces and costs
    (the scripts' --help), the tasks whose data it reads, its runs and what its result tables
    hold (one, or two for T4 + T5)."""

    name: str
    script: str
    tables: Mapping[str, str]
    """Its result tables, name -> title; each prints `evals/paper/<name>.json` beside ours."""
    reproduces: str
    cost: str
    tasks: tuple[str, ...]
    plan: Callable[[TableContext], list[RunSpec]]
    tabulate: Callable[[TableContext, Mapping[str, Result]], list[TableContent]]
    """The content of each of `tables`, in their order."""

    @property
    def papers(self) -> tuple[str, ...]:
        """The `evals/paper/<name>.json` files it prints beside its numbers."""
        return tuple(self.tables)

    def build(self, ctx: TableContext, results: Mapping[str, Result]) -> list[ResultTable]:
        """Its result tables, each headed by every way its runs deviate from the paper."""
        header = deviations(ctx, self.plan(ctx))
        contents = self.tabulate(ctx, results)
        return [
            ResultTable(
                table=name,
                title=title,
                header=[*header, *content.header],
                columns=content.columns,
                rows=content.rows,
                paper_where=ctx.paper_of(name).where,
                notes=list(content.notes),
                figures=list(content.figures),
            )
            for (name, title), content in zip(self.tables.items(), contents, strict=True)
        ]


def flatten(layout: Layout) -> list[RunSpec]:
    """Every run of a layout, duplicates kept once, dependencies first."""
    return unique_runs(
        spec for groups in layout.values() for specs in groups.values() for spec in specs
    )


def results_of(specs: Sequence[RunSpec], results: Mapping[str, Result]) -> list[Result]:
    """The results of `specs`; a run without one (never made) is a failure saying so."""
    return [results.get(s.run_id) or RunFailure(run_id=s.run_id, error="not run") for s in specs]


def summary_metric(name: str, category: str | None = None, scale: float = 100.0) -> Metric:
    """A test metric of the run's (trained) evaluation, overall or of one category, in
    points; `NotMeasured` (with the reason) when the run has no evaluation, no question of
    that category, or every question of it failed."""

    def read(outcome: RunOutcome) -> float | None:
        summary = outcome.summary
        if summary is None:
            raise NotMeasured("no test evaluation")
        group = summary.overall if category is None else summary.per_category.get(category)
        if group is None:
            raise NotMeasured(f"no {category} question among its test questions")
        if group.count == group.failed:
            raise NotMeasured(f"all {group.count} test question(s) failed")
        value = group.metrics.get(name)
        if value is None:
            raise NotMeasured(f"its task reports no {name}")
        return value * scale

    return read


def paper_row(label: str) -> str:
    """The paper's row of a row labelled per actor (`GRSE [qwen-7b]` -> `GRSE`)."""
    return label.split(" [")[0]


def metric_cells(
    paper: PaperTable,
    row: str,
    outcomes: Sequence[Result],
    metrics: Mapping[str, Metric],
    digits: int = 1,
) -> dict[str, Cell]:
    """One row's cells: each metric over the row's runs, beside the paper's value of its
    column in `row`."""
    return {
        key: collect(outcomes, metric, paper=paper.value(row, key), digits=digits)
        for key, metric in metrics.items()
    }
