"""Table 1: HotpotQA (distractor, hard) test F1 of the single-model baselines, the empty library,
MASkills, GRSE w/o structure and GRSE, one column per actor (the paper's Qwen3.8 and Gemma4),
mean ± SD over seeds; EM beside each as a column of ours the paper does not print."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.specs import baseline_spec, eval_spec, train_spec
from grse_graph.reproduce.table import TableContent, collect

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

TASK = "hotpotqa"
BASELINES = {"IO": "io", "CoT": "cot", "CoT-SC": "cot-sc", "Self-Refine": "self-refine"}
EMPTY = "Empty library"
TRAINED = {
    "MASkills": ("maskills", "default"),
    "GRSE w/o structure": ("grse", "no-structure"),
    "GRSE": ("grse", "default"),
}
"""The trained rows, in the paper's order (after the baselines and the empty library)."""
ROWS = (*BASELINES, EMPTY, *TRAINED)
METRICS = {"f1": "F1", "em": "EM"}
"""The paper's Table 1 prints F1 alone (grse.txt:191); EM is a column of ours."""


def empty_run(ctx: TableContext, actor: Actor) -> RunSpec:
    """The empty-library team on the HotpotQA test split (shared with T3, T6)."""
    return eval_spec(ctx, actor, TASK)


def trained_runs(ctx: TableContext, actor: Actor, label: str) -> list[RunSpec]:
    """One training run per seed of a trained row (shared with T3, T6, T9, T11)."""
    method, variant = TRAINED[label]
    start = empty_run(ctx, actor)
    return [train_spec(ctx, actor, TASK, None, method, variant, s, start=start) for s in ctx.seeds]


def layout(ctx: TableContext) -> Layout:
    rows: Layout = {label: {} for label in ROWS}
    for actor in ctx.actors:
        empty = empty_run(ctx, actor)
        for label, method in BASELINES.items():
            baselines = (baseline_spec(ctx, actor, TASK, None, method, s) for s in ctx.seeds)
            rows[label][actor.label] = unique_runs(baselines)
        rows[EMPTY][actor.label] = [empty]
        for label in TRAINED:
            rows[label][actor.label] = [empty, *trained_runs(ctx, actor, label)]
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    return flatten(layout(ctx))


def _cell_specs(label: str, specs: list[RunSpec]) -> list[RunSpec]:
    # A trained row's cell reads its training runs, not the shared empty-library run.
    return [s for s in specs if s.kind == "train"] if label in TRAINED else specs


def column_key(paper: str | None, actor: Actor, metric: str) -> str:
    """A column's key: the paper's actor and metric (`Qwen3.8:f1`), or ours past them."""
    return f"{paper or actor.label}:{metric}"


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    rows = layout(ctx)
    columns = []
    for actor in ctx.actors:
        paper = paper_actor(ctx, actor)
        for key, name in METRICS.items():
            label = f"{paper or actor.label} {name} ({actor.label})"
            columns.append(
                layout_column(ctx.paper, column_key(paper, actor, key), label, actor.label)
            )
    table_rows = []
    for label, groups in rows.items():
        cells = {}
        for actor in ctx.actors:
            specs = _cell_specs(label, groups[actor.label])
            for key in METRICS:
                column = column_key(paper_actor(ctx, actor), actor, key)
                cells[column] = collect(
                    results_of(specs, results),
                    summary_metric(key),
                    paper=ctx.paper.value(label, column),
                )
        table_rows.append(layout_row(ctx.paper, label, label, cells))
    notes = [
        "greedy rows (empty library, IO, CoT, Self-Refine) are one run: their decoding does not "
        "depend on the seed",
    ]
    return [TableContent(columns=columns, rows=table_rows, notes=notes, header=actor_lines(ctx))]
