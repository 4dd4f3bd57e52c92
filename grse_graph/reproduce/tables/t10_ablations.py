"""Table 10: ablations on one library shared by the four LoCoMo categories (mixed training, 32
questions per iteration): the empty library, GRSE, w/o structure, G = 1, DAPO filter and
w/ label, one run per setting as in the paper; test F1 and BLEU per category, over all
questions (All) and averaged over the four categories with equal weight (Avg.)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.specs import eval_spec, train_spec
from grse_graph.reproduce.table import Metric, Row, TableContent

from .base import (
    Result,
    actor_lines,
    actor_suffix,
    dependencies_first,
    layout_column,
    layout_row,
    metric_cells,
    paper_actor,
    results_of,
    summary_metric,
)
from .t2_locomo import CATEGORIES

TASK = "locomo"
PAPER_ACTOR = "Qwen3.8"
"""The one actor of the paper's Table 10 (grse.txt:421)."""
EMPTY = "Empty library"
VARIANTS = {
    "GRSE": "default",
    "w/o structure": "no-structure",
    "G = 1": "g1",
    "DAPO filter": "dapo",
    "w/ label": "labels",
}
METRICS = {"f1": "F1", "bleu": "BLEU"}
GROUPS = {**{c: c for c in CATEGORIES}, "all": "All", "avg": "Avg."}
"""The column groups (key -> label): each category, every question pooled (All) and the
categories' equal-weight mean (Avg.)."""


def groups(ctx: TableContext) -> dict[str, list[RunSpec]]:
    """Row label -> its runs (the first seed alone: one run per setting)."""
    rows: dict[str, list[RunSpec]] = {}
    for actor in ctx.actors:
        tag = actor_suffix(ctx, actor)
        empty = eval_spec(ctx, actor, TASK)
        rows[EMPTY + tag] = [empty]
        for label, variant in VARIANTS.items():
            rows[label + tag] = [
                train_spec(ctx, actor, TASK, None, "grse", variant, s, start=empty)
                for s in ctx.seeds
            ]
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    return dependencies_first(s for specs in groups(ctx).values() for s in specs)


def _avg(metric: str) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        values = [summary_metric(metric, c)(outcome) for c in CATEGORIES]  # NotMeasured: fails
        present = [v for v in values if v is not None]
        return statistics.fmean(present) if len(present) == len(CATEGORIES) else None

    return read


def column_key(group: str, metric: str) -> str:
    """A column's key: its group and metric (`multi-hop:f1`, `all:bleu`)."""
    return f"{group}:{metric}"


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = [
        layout_column(ctx.paper, column_key(group, key), f"{label} {name}")
        for group, label in GROUPS.items()
        for key, name in METRICS.items()
    ]
    metrics: dict[str, Metric] = {}
    for key in METRICS:
        metrics |= {column_key(c, key): summary_metric(key, c) for c in CATEGORIES}
        metrics[column_key("all", key)] = summary_metric(key)
        metrics[column_key("avg", key)] = _avg(key)
    rows, layout = [], groups(ctx)
    for actor in ctx.actors:
        beside = paper_actor(ctx, actor) == PAPER_ACTOR
        tag = actor_suffix(ctx, actor)
        for label in (EMPTY, *VARIANTS):
            outcomes = results_of(layout[label + tag], results)
            cells = metric_cells(ctx.paper, label, outcomes, metrics)
            if beside:
                rows.append(layout_row(ctx.paper, label, label + tag, cells))
                continue
            for cell in cells.values():
                cell.paper = None
            rows.append(Row(label=label + tag, cells=cells))
    notes = [
        "All: every test question pooled; Avg.: the four categories' values of the run, each "
        "category weighing the same",
    ]
    header = actor_lines(ctx, (PAPER_ACTOR,))
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
