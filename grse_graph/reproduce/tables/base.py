"""What a table definition is, and the helpers every table uses to read outcomes."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.deviations import deviations
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import PaperTable
from grse_graph.reproduce.table import (
    Cell,
    Column,
    Metric,
    NotMeasured,
    OutsideTestSize,
    ResultTable,
    Row,
    TableContent,
    collect,
)

Result = RunOutcome | RunFailure
Layout = dict[str, dict[str, list[RunSpec]]]
"""Row label -> column group (an actor, a category) -> the runs of that cell (one per seed)."""


PAPER_ACTORS = ("Qwen3.8", "Gemma4")
"""The paper's actors (Qwen3.8-27B, Gemma4-31B-it; grse.txt:191), in its column order."""


def paper_actors(ctx: TableContext) -> dict[str, str | None]:
    """Our actor (label) -> the paper's actor whose numbers sit beside it: the one its model
    names (qwen, gemma), else the first the paper has left in order; None past the paper's
    two (each paper actor is taken once)."""
    free = list(PAPER_ACTORS)
    chosen: dict[str, str | None] = {}
    for actor in ctx.actors:
        label = actor.label.lower()
        named = [p for p in free if p.lower().rstrip("0123456789.") in label]
        pick = (named or free)[0] if named or free else None
        chosen[actor.label] = pick
        if pick is not None:
            free.remove(pick)
    return chosen


def paper_actor(ctx: TableContext, actor: Actor) -> str | None:
    """The paper's actor beside `actor` (`paper_actors`)."""
    return paper_actors(ctx)[actor.label]


def actor_suffix(ctx: TableContext, actor: Actor) -> str:
    """What a row label adds to name its actor (` [qwen-7b]`): nothing when the table has one
    actor, as the paper's tables have."""
    return f" [{actor.label}]" if len(ctx.actors) > 1 else ""


TASK_NAMES = {"hotpotqa": "HotpotQA", "locomo": "LoCoMo"}
"""The tasks of the per-task tables (3, 9, 11), in the paper's row order, and their names."""


@dataclass(frozen=True)
class RowName:
    """A row of a per-task table: its task, actor (the paper's, or ours past them), method
    and, for a per-category row of ours, the category."""

    task: str
    actor: str
    method: str
    category: str | None = None

    @property
    def _where(self) -> str:
        return TASK_NAMES[self.task] + (f" {self.category}" if self.category else "")

    @property
    def key(self) -> str:
        """The paper's row key (`LoCoMo|Qwen3.8|GRSE`); a per-category row's names it."""
        return f"{self._where}|{self.actor}|{self.method}"

    @property
    def label(self) -> str:
        """As the paper labels its rows (`LoCoMo, Qwen3.8: GRSE`)."""
        return f"{self._where}, {self.actor}: {self.method}"


def task_rows(ctx: TableContext, methods: Sequence[str]) -> list[tuple[RowName, Actor]]:
    """The rows of a per-task table in the paper's order (per task, then actor, then method),
    each with the actor whose runs fill it."""
    return [
        (RowName(task, paper_actor(ctx, actor) or actor.label, method), actor)
        for task in TASK_NAMES
        for actor in ctx.actors
        for method in methods
    ]


def actor_lines(ctx: TableContext, paper_actors: Sequence[str] = PAPER_ACTORS) -> list[str]:
    """The header lines saying which paper actor each of ours stands beside (our models are
    not the paper's: a declared deviation); `paper_actors` those the table reports."""
    lines = []
    for actor in ctx.actors:
        paper = paper_actor(ctx, actor)
        if paper in paper_actors:
            lines.append(f"actor {actor.label} beside the paper's {paper} actor")
        else:
            lines.append(
                f"actor {actor.label}: the paper's table reports no actor for it "
                f"({', '.join(paper_actors)}): its rows have no paper numbers"
            )
    return lines


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
    plan_runs: Callable[[TableContext], list[RunSpec]]
    tabulate: Callable[[TableContext, Mapping[str, Result]], list[TableContent]]
    """The content of each of `tables`, in their order."""
    first_run_only: bool = False
    """The paper reports one run per setting (its first): only the first seed is planned and
    read, whatever `--seeds` says."""

    @property
    def papers(self) -> tuple[str, ...]:
        """The `evals/paper/<name>.json` files it prints beside its numbers."""
        return tuple(self.tables)

    @property
    def paper_runs(self) -> int:
        """Runs per setting in the paper's table: one (its first run), or three seeds."""
        return 1 if self.first_run_only else 3

    def narrowed(self, ctx: TableContext) -> TableContext:
        """`ctx` with the seeds this table reads (the first alone for a first-run table)."""
        return replace(ctx, seeds=ctx.seeds[:1]) if self.first_run_only else ctx

    def plan(self, ctx: TableContext) -> list[RunSpec]:
        """Every run the table needs, dependencies first."""
        return self.plan_runs(self.narrowed(ctx))

    def header(self, ctx: TableContext) -> list[str]:
        """Every way its runs deviate from the paper (the lines above each result table)."""
        narrowed = self.narrowed(ctx)
        return deviations(narrowed, self.plan(ctx), paper_runs=self.paper_runs)

    def build(self, ctx: TableContext, results: Mapping[str, Result]) -> list[ResultTable]:
        """Its result tables, each headed by every way its runs deviate from the paper and by
        the cells not run at the smoke size. Outside the smoke size no cell may be skipped:
        such a cell becomes a failure."""
        header = self.header(ctx)
        contents = self.tabulate(self.narrowed(ctx), results)
        built = []
        for (name, title), content in zip(self.tables.items(), contents, strict=True):
            rows = content.rows if ctx.smoke else [_no_skips(row) for row in content.rows]
            table = ResultTable(
                table=name,
                title=title,
                header=[*header, *content.header],
                # The paper's rows and columns first, in its order; ours after them.
                columns=sorted(content.columns, key=lambda column: not column.paper),
                rows=sorted(rows, key=lambda row: row.key is None),
                paper_where=ctx.paper_of(name).where,
                notes=list(content.notes),
                figures=list(content.figures),
            )
            table.header += layout_lines(table, ctx.paper_of(name))
            line = table.not_run_line()
            if line is not None:
                table.header.append(line)
            built.append(table)
        return built


def layout_lines(table: ResultTable, paper: PaperTable) -> list[str]:
    """The header lines of every difference between our rows and columns and the paper's
    layout: its rows and columns we do not have (an actor not given), ours it does not have."""
    rows = {r.key for r in paper.layout.rows}
    columns = {c.key for c in paper.layout.columns}
    ours_rows = {row.key for row in table.rows}
    ours_columns = {column.key for column in table.columns if column.paper}
    lines = []
    missing = [r.label for r in paper.layout.rows if r.key not in ours_rows]
    if missing:
        lines.append(
            f"the paper's rows not in ours (no actor of ours for them): {'; '.join(missing)}"
        )
    missing = [c.label for c in paper.layout.columns if c.key not in ours_columns]
    if missing:
        lines.append(
            f"the paper's columns not in ours (no actor of ours for them): {'; '.join(missing)}"
        )
    extra = [row.label for row in table.rows if row.key not in rows]
    if extra:
        lines.append(f"rows of ours, not in the paper's table: {'; '.join(extra)}")
    extra = [c.label for c in table.columns if not c.paper or c.key not in columns]
    if extra:
        lines.append(f"columns of ours, not in the paper's table: {'; '.join(extra)}")
    return lines


def layout_row(paper: PaperTable, key: str, label: str, cells: dict[str, Cell]) -> Row:
    """A row beside the paper's row `key`, labelled as the paper labels it; a key the paper's
    layout does not hold makes a row of ours, labelled `label`."""
    labels = {r.key: r.label for r in paper.layout.rows}
    if key in labels:
        return Row(key=key, label=labels[key], cells=cells)
    return Row(label=label, cells=cells)


def layout_column(paper: PaperTable, key: str, label: str, actor: str | None = None) -> Column:
    """A column beside the paper's column `key`, labelled as the paper labels it (our values
    headed with `actor`, the actor that made them); a key the paper's layout does not hold
    makes a column of ours, labelled `label`."""
    labels = {c.key: c.label for c in paper.layout.columns}
    if key in labels:
        return Column(key=key, label=labels[key], actor=actor)
    return Column(key=key, label=label, paper=False)


def _no_skips(row: Row) -> Row:
    """`row` with every cell skipped for the size turned into a failure (full size)."""
    cells = {
        key: cell.model_copy(
            update={
                "not_run": None,
                "failures": cell.failures or [f"{cell.not_run} (outside the smoke size)"],
            }
        )
        if cell.not_run is not None and not cell.values
        else cell
        for key, cell in row.cells.items()
    }
    return row.model_copy(update={"cells": cells})


def dependencies_first(runs: Iterable[RunSpec]) -> list[RunSpec]:
    """`runs`, duplicates kept once, the training runs after the evaluations (the empty-library
    runs they start from)."""
    return sorted(unique_runs(runs), key=lambda s: s.kind == "train")


def flatten(layout: Layout) -> list[RunSpec]:
    """Every run of a layout, duplicates kept once, dependencies first."""
    return dependencies_first(
        spec for groups in layout.values() for specs in groups.values() for spec in specs
    )


def results_of(specs: Sequence[RunSpec], results: Mapping[str, Result]) -> list[Result]:
    """The results of `specs`; a run without one (never made) is a failure saying so."""
    return [results.get(s.run_id) or RunFailure(run_id=s.run_id, error="not run") for s in specs]


def summary_metric(name: str, category: str | None = None) -> Metric:
    """A test metric of the run's (trained) evaluation, overall or of one category, in
    points; `NotMeasured` (with the reason) when the run has no evaluation or every question
    failed, `OutsideTestSize` when its test questions hold no question of that category or
    none that reports the metric (the demo reports BLEU on its conversation questions only)."""

    def read(outcome: RunOutcome) -> float | None:
        summary = outcome.summary
        if summary is None:
            raise NotMeasured("no test evaluation")
        group = summary.overall if category is None else summary.per_category.get(category)
        if group is None:
            raise OutsideTestSize(f"no {category} question among its test questions")
        if group.count == group.failed:
            raise NotMeasured(f"all {group.count} test question(s) failed")
        value = group.metrics.get(name)
        if value is None:
            raise OutsideTestSize(f"no question reporting {name} among its test questions")
        return value * 100

    return read


def metric_cells(
    paper: PaperTable,
    row: str,
    outcomes: Sequence[Result],
    metrics: Mapping[str, Metric],
) -> dict[str, Cell]:
    """One row's cells: each metric over the row's runs, beside the paper's value of its
    column in `row`."""
    return {
        key: collect(outcomes, metric, paper=paper.value(row, key))
        for key, metric in metrics.items()
    }
