"""Table 10: ablations on one shared (mixed-category) LoCoMo library: GRSE, w/o structure,
G = 1, DAPO filter, w/ label, beside the empty library; test F1 per category and Avg."""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.deviations import deviations
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.specs import eval_spec, train_spec
from grse_graph.reproduce.table import Column, Metric, ResultTable, Row, collect

from .base import Result, TableDef, results_of, summary_metric
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
    runs: dict[str, RunSpec] = {}
    for specs in groups(ctx).values():
        runs.update({s.run_id: s for s in specs})
    return sorted(runs.values(), key=lambda s: s.kind == "train")


def _avg(outcome: RunOutcome) -> float | None:
    values = [summary_metric("f1", c)(outcome) for c in CATEGORIES]
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if len(present) == len(CATEGORIES) else None


def build(ctx: TableContext, results: Mapping[str, Result]) -> list[ResultTable]:
    columns = [Column(key=c, label=f"{c} F1") for c in CATEGORIES]
    columns.append(Column(key="avg", label="Avg. F1"))
    rows = []
    for label, specs in groups(ctx).items():
        outcomes = results_of(specs, results)
        paper_row = label.split(" [")[0]
        metrics: dict[str, Metric] = {c: summary_metric("f1", c) for c in CATEGORIES}
        metrics["avg"] = _avg
        cells = {
            key: collect(outcomes, metric, paper=ctx.paper.value(paper_row, key))
            for key, metric in metrics.items()
        }
        rows.append(Row(label=label, cells=cells))
    return [
        ResultTable(
            table="table10",
            title="Table 10: ablations on one mixed LoCoMo library (test F1)",
            header=deviations(ctx, plan(ctx)),
            columns=columns,
            rows=rows,
            paper_where=ctx.paper.where,
            notes=["Avg.: the mean of the four categories' F1 of one run, then mean ± SD"],
        )
    ]


TABLE10 = TableDef(
    name="table10",
    script="table10_ablations.py",
    title="Table 10: ablations",
    reproduces=(
        "Table 10 of the GRSE paper: GRSE and its ablations (w/o structure, G = 1, DAPO filter, "
        "w/ label) each training one library on all four LoCoMo categories (32 questions per "
        "iteration), tested per category with the Avg."
    ),
    cost=(
        "per actor and seed: 5 mixed-category training runs (T = 5, 32 questions per "
        "iteration, the whole 308-question validation split) and their tests on the 842 test "
        "questions, plus the empty library once"
    ),
    tasks=(TASK,),
    papers=("table10",),
    plan=plan,
    build=build,
)
