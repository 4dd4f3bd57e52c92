"""Table 1: HotpotQA (distractor, hard), F1 and EM of GRSE, GRSE w/o structure, MASkills, the
empty library and the single-model baselines, per actor, mean ± SD over seeds."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.specs import baseline_spec, eval_spec, train_spec
from grse_graph.reproduce.table import Column, Row, TableContent, collect

from .base import Layout, Result, flatten, results_of, summary_metric

TASK = "hotpotqa"
TRAINED = {
    "GRSE": ("grse", "default"),
    "GRSE w/o structure": ("grse", "no-structure"),
    "MASkills": ("maskills", "default"),
}
BASELINES = {"IO": "io", "CoT": "cot", "CoT-SC": "cot-sc", "Self-Refine": "self-refine"}
METRICS = {"f1": "F1", "em": "EM"}


def empty_run(ctx: TableContext, actor: Actor) -> RunSpec:
    """The empty-library team on the HotpotQA test split (shared with T3, T6)."""
    return eval_spec(ctx, actor, TASK)


def trained_runs(ctx: TableContext, actor: Actor, label: str) -> list[RunSpec]:
    """One training run per seed of a trained row (shared with T3, T6, T9, T11)."""
    method, variant = TRAINED[label]
    start = empty_run(ctx, actor)
    return [train_spec(ctx, actor, TASK, None, method, variant, s, start=start) for s in ctx.seeds]


def layout(ctx: TableContext) -> Layout:
    rows: Layout = {}
    for actor in ctx.actors:
        empty = empty_run(ctx, actor)
        for label in TRAINED:
            rows.setdefault(label, {})[actor.label] = [empty, *trained_runs(ctx, actor, label)]
        rows.setdefault("Empty library", {})[actor.label] = [empty]
        for label, method in BASELINES.items():
            baselines = (baseline_spec(ctx, actor, TASK, None, method, s) for s in ctx.seeds)
            rows.setdefault(label, {})[actor.label] = unique_runs(baselines)
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    return flatten(layout(ctx))


def _cell_specs(label: str, specs: list[RunSpec]) -> list[RunSpec]:
    # A trained row's cell reads its training runs, not the shared empty-library run.
    return [s for s in specs if s.kind == "train"] if label in TRAINED else specs


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    rows = layout(ctx)
    columns = [
        Column(key=f"{actor.label}:{key}", label=f"{name} [{actor.label}]")
        for actor in ctx.actors
        for key, name in METRICS.items()
    ]
    table_rows = []
    for label, groups in rows.items():
        cells = {}
        for actor in ctx.actors:
            specs = _cell_specs(label, groups[actor.label])
            for key in METRICS:
                cells[f"{actor.label}:{key}"] = collect(
                    results_of(specs, results),
                    summary_metric(key),
                    paper=ctx.paper.value(label, key),
                )
        table_rows.append(Row(label=label, cells=cells))
    notes = [
        "greedy rows (empty library, IO, CoT, Self-Refine) are one run: their decoding does not "
        "depend on the seed",
    ]
    return [TableContent(columns=columns, rows=table_rows, notes=notes)]
