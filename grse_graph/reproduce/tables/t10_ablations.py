"""Table 10: ablations on one shared (mixed-category) LoCoMo library: GRSE, w/o structure,
G = 1, DAPO filter, w/ label, beside the empty library; test F1 per category and Avg."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.specs import eval_spec, train_spec
from grse_graph.reproduce.table import Column, Metric, Row, TableContent

from .base import Result, metric_cells, paper_row, results_of, summary_metric
from .t2_locomo import CATEGORIES

TASK = "locomo"
VARIANTS = {
    "GRSE": "default",
    "w/o structure": "no-structure",
    "G = 1": "g1",
    "DAPO filter": "dapo",
    "w/ label": "labels",
}


def groups(ctx: TableContext) -> dict[str, list[RunSpec]]:
    rows: dict[str, list[RunSpec]] = {}
    for actor in ctx.actors:
        empty = eval_spec(ctx, actor, TASK)
        for label, variant in VARIANTS.items():
            rows[f"{label} [{actor.label}]"] = [
                train_spec(ctx, actor, TASK, None, "grse", variant, s, start=empty)
                for s in ctx.seeds
            ]
        rows[f"Empty library [{actor.label}]"] = [empty]
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    runs = unique_runs(s for specs in groups(ctx).values() for s in specs)
    return sorted(runs, key=lambda s: s.kind == "train")


def _avg(outcome: RunOutcome) -> float | None:
    values = [summary_metric("f1", c)(outcome) for c in CATEGORIES]
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if len(present) == len(CATEGORIES) else None


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = [Column(key=c, label=f"{c} F1") for c in CATEGORIES]
    columns.append(Column(key="avg", label="Avg. F1"))
    metrics: dict[str, Metric] = {c: summary_metric("f1", c) for c in CATEGORIES}
    metrics["avg"] = _avg
    rows = []
    for label, specs in groups(ctx).items():
        cells = metric_cells(ctx.paper, paper_row(label), results_of(specs, results), metrics)
        rows.append(Row(label=label, cells=cells))
    notes = ["Avg.: the mean of the four categories' F1 of one run, then mean ± SD"]
    return [TableContent(columns=columns, rows=rows, notes=notes)]
