"""Table 6: transfer of libraries between HotpotQA and LoCoMo multi-hop: each GRSE library
tested in its own domain (T1's / T2's runs) and in the other one, beside the empty library of
the target task."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.specs import transfer_spec
from grse_graph.reproduce.table import Column, Row, TableContent, collect

from . import t1_hotpotqa, t2_locomo
from .base import Result, paper_row, results_of, summary_metric

MULTI_HOP = "multi-hop"


def groups(ctx: TableContext) -> dict[str, dict[str, list[RunSpec]]]:
    """Row -> target task -> runs (per seed)."""
    rows: dict[str, dict[str, list[RunSpec]]] = {}
    for actor in ctx.actors:
        hotpot = t1_hotpotqa.trained_runs(ctx, actor, "GRSE")
        locomo = t2_locomo.trained_runs(ctx, actor, "GRSE", MULTI_HOP)
        tag = f" [{actor.label}]"
        rows["HotpotQA library" + tag] = {
            "hotpotqa": hotpot,
            "locomo": [transfer_spec(ctx, actor, s, "locomo", MULTI_HOP) for s in hotpot],
        }
        rows["LoCoMo multi-hop library" + tag] = {
            "hotpotqa": [transfer_spec(ctx, actor, s, "hotpotqa") for s in locomo],
            "locomo": locomo,
        }
        rows["Empty library" + tag] = {
            "hotpotqa": [t1_hotpotqa.empty_run(ctx, actor)],
            "locomo": [t2_locomo.empty_run(ctx, actor, MULTI_HOP)],
        }
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs += [t1_hotpotqa.empty_run(ctx, actor), t2_locomo.empty_run(ctx, actor, MULTI_HOP)]
    for targets in groups(ctx).values():
        for specs in targets.values():
            runs += specs
    return sorted(unique_runs(runs), key=lambda s: (s.kind == "train", bool(s.needs)))


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = [
        Column(key="hotpotqa", label="HotpotQA F1"),
        Column(key="locomo", label="LoCoMo multi-hop F1"),
    ]
    metrics = {"hotpotqa": summary_metric("f1"), "locomo": summary_metric("f1", MULTI_HOP)}
    rows = []
    for label, targets in groups(ctx).items():
        cells = {
            target: collect(
                results_of(targets[target], results),
                metric,
                paper=ctx.paper.value(paper_row(label), target),
            )
            for target, metric in metrics.items()
        }
        rows.append(Row(label=label, cells=cells))
    return [TableContent(columns=columns, rows=rows)]
