"""Table 2: LoCoMo per category, F1 and BLEU of GRSE and MASkills trained per category, the
empty library and the full-context baseline (32-token answers), with the Avg. over the four
categories; mean ± SD over seeds."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunFailure
from grse_graph.reproduce.specs import baseline_spec, eval_spec, train_spec
from grse_graph.reproduce.table import Cell, Column, Row, TableContent, collect

from .base import Layout, Result, flatten, results_of, summary_metric

TASK = "locomo"
CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")
TRAINED = {"GRSE": "grse", "MASkills": "maskills"}
METRICS = {"f1": "F1", "bleu": "BLEU"}
NOT_TRAINED = "not trained at the smoke size"
"""The text of a trained row's cell in a category the smoke size does not train."""


def trained_categories(ctx: TableContext) -> tuple[str, ...]:
    """The categories GRSE and MASkills train on, one run each: all four, or the smoke
    size's `locomo_categories` (the others' trained cells say so)."""
    if not ctx.smoke:
        return CATEGORIES
    return tuple(c for c in CATEGORIES if c in ctx.settings.smoke.locomo_categories)


def smoke_header(ctx: TableContext) -> list[str]:
    """The header line of a table whose LoCoMo categories are not all trained."""
    trained = trained_categories(ctx)
    if trained == CATEGORIES:
        return []
    return [
        f"SMOKE SIZE: LoCoMo trained per category on {', '.join(trained) or 'none'} "
        f"only (settings.json smoke.locomo_categories); the other categories' trained cells "
        f"read '{NOT_TRAINED}'"
    ]


def empty_run(ctx: TableContext, actor: Actor, category: str) -> RunSpec:
    return eval_spec(ctx, actor, TASK, category)


def trained_runs(ctx: TableContext, actor: Actor, label: str, category: str) -> list[RunSpec]:
    """One per-category training run per seed (shared with T3, T6); none in a category the
    smoke size does not train."""
    if category not in trained_categories(ctx):
        return []
    start = empty_run(ctx, actor, category)
    return [
        train_spec(ctx, actor, TASK, category, TRAINED[label], "default", s, start=start)
        for s in ctx.seeds
    ]


def layout(ctx: TableContext) -> Layout:
    rows: Layout = {}
    for actor in ctx.actors:
        for category in CATEGORIES:
            key = f"{actor.label}|{category}"
            empty = empty_run(ctx, actor, category)
            for label in TRAINED:
                rows.setdefault(label, {})[key] = trained_runs(ctx, actor, label, category)
            rows.setdefault("Empty library", {})[key] = [empty]
            rows.setdefault("Full-context", {})[key] = [
                baseline_spec(ctx, actor, TASK, category, "full-context", 0)
            ]
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    runs = flatten(layout(ctx))
    # Dependencies first: the empty-library runs the training runs share.
    return sorted(runs, key=lambda s: s.kind == "train")


def _average(per_category: list[list[Result]], metric: str) -> Cell:
    """Avg. over the categories, per seed position: a seed with a failed category fails."""
    cell = Cell()
    for position in range(max(len(r) for r in per_category)):
        values = []
        for category, results in zip(CATEGORIES, per_category, strict=True):
            result = results[min(position, len(results) - 1)]
            value = (
                None if isinstance(result, RunFailure) else summary_metric(metric, category)(result)
            )
            if value is None:
                cell.failures.append(f"{category} has no {metric} for seed position {position}")
                break
            values.append(value)
        else:
            cell.values.append(statistics.fmean(values))
    return cell


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    rows = layout(ctx)
    columns = []
    for actor in ctx.actors:
        for category in [*CATEGORIES, "avg"]:
            for key, name in METRICS.items():
                columns.append(
                    Column(
                        key=f"{actor.label}|{category}:{key}",
                        label=f"{category} {name} [{actor.label}]",
                    )
                )
    table_rows = []
    for label, groups in rows.items():
        cells: dict[str, Cell] = {}
        for actor in ctx.actors:
            per_category = []
            for category in CATEGORIES:
                specs = groups[f"{actor.label}|{category}"]
                if not specs:
                    for key in ("avg", category):
                        cells |= {
                            f"{actor.label}|{key}:{m}": Cell(text=NOT_TRAINED) for m in METRICS
                        }
                    continue
                group = results_of(specs, results)
                per_category.append(group)
                for key in METRICS:
                    cells[f"{actor.label}|{category}:{key}"] = collect(
                        group,
                        summary_metric(key, category),
                        paper=ctx.paper.value(label, f"{category}:{key}"),
                    )
            if len(per_category) < len(CATEGORIES):
                continue  # the Avg. needs every category: NOT_TRAINED above
            for key in METRICS:
                avg = _average(per_category, key)
                avg.paper = ctx.paper.value(label, f"avg:{key}")
                cells[f"{actor.label}|avg:{key}"] = avg
        table_rows.append(Row(label=label, cells=cells))
    notes = ["Avg.: the mean of the four categories' values of one seed, then mean ± SD"]
    return [TableContent(columns=columns, rows=table_rows, notes=notes, header=smoke_header(ctx))]
