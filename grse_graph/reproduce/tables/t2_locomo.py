"""Table 2: LoCoMo per category, F1 and BLEU of the full-context baseline (32-token answers),
the empty library, and MASkills, GRSE w/o structure and GRSE trained per category, with the
Avg. over the four categories; one column group per actor (the paper's Qwen3.8 and Gemma4),
mean ± SD over seeds."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.paper import PaperValue
from grse_graph.reproduce.specs import baseline_spec, eval_spec, train_spec
from grse_graph.reproduce.table import (
    Cell,
    NotMeasured,
    TableContent,
    collect,
    measured,
    seed_result,
)

from . import t1_hotpotqa
from .base import (
    Layout,
    Result,
    actor_lines,
    flatten,
    layout_column,
    layout_row,
    paper_actor,
    results_of,
    summary_metric,
)

TASK = "locomo"
CATEGORIES = ("multi-hop", "temporal", "open-domain", "single-hop")
FULL_CONTEXT = "Full-context"
EMPTY = "Empty library"
TRAINED = t1_hotpotqa.TRAINED
"""Table 1's trained rows, in the paper's order (after full-context and the empty library)."""
ROWS = (FULL_CONTEXT, EMPTY, *TRAINED)
METRICS = {"f1": "F1", "bleu": "BLEU"}


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
        "only (settings.json smoke.locomo_categories); the other categories' trained cells "
        "are not run"
    ]


def pooled_smoke_header(ctx: TableContext, rows: str, paper: str) -> list[str]:
    """The header line of a table whose LoCoMo rows combine the per-category runs, when the
    smoke size trains fewer than the four categories: `rows` says what its rows do with the
    trained ones (`the LoCoMo rows sum the runs of`), `paper` what the paper does with all
    four (`sums`)."""
    trained = trained_categories(ctx)
    if trained == CATEGORIES:
        return []
    return [
        f"SMOKE SIZE: {rows} {', '.join(trained) or 'no category'} only "
        f"(the categories trained at this size; the paper {paper} all four)"
    ]


def empty_run(ctx: TableContext, actor: Actor, category: str) -> RunSpec:
    return eval_spec(ctx, actor, TASK, category)


def trained_runs(ctx: TableContext, actor: Actor, label: str, category: str) -> list[RunSpec]:
    """One per-category training run per seed (shared with T3, T6); none in a category the
    smoke size does not train."""
    if category not in trained_categories(ctx):
        return []
    method, variant = TRAINED[label]
    start = empty_run(ctx, actor, category)
    return [
        train_spec(ctx, actor, TASK, category, method, variant, s, start=start) for s in ctx.seeds
    ]


def layout(ctx: TableContext) -> Layout:
    rows: Layout = {label: {} for label in ROWS}
    for actor in ctx.actors:
        for category in CATEGORIES:
            key = f"{actor.label}|{category}"
            rows[FULL_CONTEXT][key] = [baseline_spec(ctx, actor, TASK, category, "full-context", 0)]
            rows[EMPTY][key] = [empty_run(ctx, actor, category)]
            for label in TRAINED:
                rows[label][key] = trained_runs(ctx, actor, label, category)
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    return flatten(layout(ctx))


def _average(per_category: list[list[Result]], metric: str) -> Cell:
    """Avg. over the categories, per seed position: a seed with a failed category fails."""
    cell = Cell()
    for position in range(max(len(r) for r in per_category)):
        values = []
        for category, results in zip(CATEGORIES, per_category, strict=True):
            try:
                values.append(
                    measured(seed_result(results, position), summary_metric(metric, category))
                )
            except NotMeasured:
                cell.failures.append(f"{category} has no {metric} for seed position {position}")
                break
        else:
            cell.values.append(statistics.fmean(values))
    return cell


def column_key(paper: str | None, actor: Actor, category: str, metric: str) -> str:
    """A column's key: the paper's actor, category and metric (`Qwen3.8|multi-hop:f1`), or
    ours past the paper's actors."""
    return f"{paper or actor.label}|{category}:{metric}"


def _paper_values(
    ctx: TableContext, row: str, paper: str | None, actor: Actor
) -> Callable[[str, str], PaperValue]:
    """The paper's value of `row` by category and metric in the paper actor's columns (none
    for an actor past the paper's)."""

    def value(category: str, metric: str) -> PaperValue:
        return ctx.paper.value(row, column_key(paper, actor, category, metric)) if paper else None

    return value


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    rows = layout(ctx)
    columns = []
    for actor in ctx.actors:
        paper = paper_actor(ctx, actor)
        for category in [*CATEGORIES, "avg"]:
            for key, name in METRICS.items():
                label = f"{paper or actor.label} {category} {name} ({actor.label})"
                columns.append(
                    layout_column(
                        ctx.paper, column_key(paper, actor, category, key), label, actor.label
                    )
                )
    table_rows = []
    for label, groups in rows.items():
        cells: dict[str, Cell] = {}
        for actor in ctx.actors:
            paper = paper_actor(ctx, actor)
            value = _paper_values(ctx, label, paper, actor)
            per_category = []
            for category in CATEGORIES:
                specs = groups[f"{actor.label}|{category}"]
                if not specs:  # a category the smoke size does not train
                    for key in ("avg", category):
                        cells |= {
                            column_key(paper, actor, key, m): Cell.skipped_at_size(value(key, m))
                            for m in METRICS
                        }
                    continue
                group = results_of(specs, results)
                per_category.append(group)
                for key in METRICS:
                    cells[column_key(paper, actor, category, key)] = collect(
                        group, summary_metric(key, category), paper=value(category, key)
                    )
            if len(per_category) < len(CATEGORIES):
                continue  # the Avg. needs every category: not run above
            for key in METRICS:
                avg = _average(per_category, key)
                avg.paper = value("avg", key)
                cells[column_key(paper, actor, "avg", key)] = avg
        table_rows.append(layout_row(ctx.paper, label, label, cells))
    notes = [
        "Avg. (ours): the mean of the four categories' values of one seed, then mean ± SD",
    ]
    header = [*actor_lines(ctx), *smoke_header(ctx)]
    return [TableContent(columns=columns, rows=table_rows, notes=notes, header=header)]


def trained_parts(ctx: TableContext, actor: Actor, task: str, label: str) -> list[list[RunSpec]]:
    """The runs (one per seed) a trained row of a per-task table combines, per part:
    HotpotQA's one, LoCoMo's one per category trained at this size (Tables 9 and 11)."""
    if task == "hotpotqa":
        parts = [t1_hotpotqa.trained_runs(ctx, actor, label)]
    else:
        parts = [trained_runs(ctx, actor, label, c) for c in trained_categories(ctx)]
    return [runs for runs in parts if runs]


def empty_runs_of_both_tasks(ctx: TableContext) -> list[RunSpec]:
    """Each actor's empty-library evaluations on HotpotQA and on the trained LoCoMo categories
    (the starting answers that Tables 3 and 11 read beside their training runs)."""
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs.append(t1_hotpotqa.empty_run(ctx, actor))
        runs += [empty_run(ctx, actor, c) for c in trained_categories(ctx)]
    return runs
