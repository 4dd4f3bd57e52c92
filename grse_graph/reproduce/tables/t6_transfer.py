"""Table 6: transfer of final libraries between HotpotQA and LoCoMo multi-hop, for GRSE and
MASkills: each method's libraries tested on the other task (transfer) beside those learned on
the target itself (in-domain: T1's and T2's runs) and the target's empty library; test F1 per
target, mean ± SD over seeds. The paper reports the Qwen3.8 actor alone."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.specs import transfer_spec
from grse_graph.reproduce.table import Row, TableContent, collect

from . import t1_hotpotqa, t2_locomo
from .base import (
    Result,
    actor_lines,
    actor_suffix,
    layout_column,
    layout_row,
    paper_actor,
    results_of,
    summary_metric,
)

MULTI_HOP = "multi-hop"
PAPER_ACTOR = "Qwen3.8"
"""The one actor of the paper's Table 6 (grse.txt:261)."""
METHODS = ("MASkills", "GRSE")
EMPTY = "Empty library"
TARGETS = {"hotpotqa": "HotpotQA", "locomo": "LoCoMo multi-hop"}
"""Target task -> its column's label."""


def target_key(target: str) -> str:
    """The paper's column key of a target (`hotpotqa:f1`, `locomo-multi-hop:f1`)."""
    return f"{target}:f1" if target == "hotpotqa" else f"{target}-{MULTI_HOP}:f1"


def row_keys(method: str) -> tuple[str, str]:
    """The paper's transfer and in-domain row keys of a method (`GRSE|Transfer`)."""
    return f"{method}|Transfer", f"{method}|In-domain"


def groups(ctx: TableContext) -> dict[str, dict[str, list[RunSpec]]]:
    """Row -> target task -> runs (per seed)."""
    rows: dict[str, dict[str, list[RunSpec]]] = {}
    for actor in ctx.actors:
        tag = actor_suffix(ctx, actor)
        rows[EMPTY + tag] = {
            "hotpotqa": [t1_hotpotqa.empty_run(ctx, actor)],
            "locomo": [t2_locomo.empty_run(ctx, actor, MULTI_HOP)],
        }
        for method in METHODS:
            hotpot = t1_hotpotqa.trained_runs(ctx, actor, method)
            locomo = t2_locomo.trained_runs(ctx, actor, method, MULTI_HOP)
            transfer, in_domain = row_keys(method)
            rows[transfer + tag] = {
                "hotpotqa": [transfer_spec(ctx, actor, s, "hotpotqa") for s in locomo],
                "locomo": [transfer_spec(ctx, actor, s, "locomo", MULTI_HOP) for s in hotpot],
            }
            rows[in_domain + tag] = {"hotpotqa": hotpot, "locomo": locomo}
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
    columns = [layout_column(ctx.paper, target_key(t), label) for t, label in TARGETS.items()]
    metrics = {"hotpotqa": summary_metric("f1"), "locomo": summary_metric("f1", MULTI_HOP)}
    rows, layout = [], groups(ctx)
    for actor in ctx.actors:
        beside = paper_actor(ctx, actor) == PAPER_ACTOR
        tag = actor_suffix(ctx, actor)
        for key in (EMPTY, *(row for m in METHODS for row in row_keys(m))):
            targets = layout[key + tag]
            cells = {
                target_key(target): collect(
                    results_of(targets[target], results),
                    metric,
                    paper=ctx.paper.value(key, target_key(target)) if beside else None,
                )
                for target, metric in metrics.items()
            }
            label = key.replace("|", ": ") + tag
            rows.append(
                layout_row(ctx.paper, key, label, cells)
                if beside
                else Row(label=label, cells=cells)
            )
    notes = [
        "transfer: the final libraries learned on the other task (HotpotQA's on LoCoMo "
        "multi-hop and the other way round), each agent in the target task's role; in-domain: "
        "those learned on the target (Tables 1 and 2's runs)",
    ]
    header = actor_lines(ctx, (PAPER_ACTOR,))
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
