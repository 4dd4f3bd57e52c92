"""Table 3: answer transitions from the empty to the GRSE-trained library (declined / wrong /
correct), the change in F1, and the evidence columns (LoCoMo: D->C transitions whose
retriever cited no dialogue id). Reads T1's and T2's GRSE runs; draws the transition bars."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from grse_graph.evaluation.store import EvalFolder
from grse_graph.evaluation.transitions import LibraryComparison, Outcome
from grse_graph.metrics.analysis import cites_dialogue, evidence_citation_rate
from grse_graph.reproduce import figures
from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.table import Cell, Column, Metric, NotMeasured, Row, TableContent

from . import t1_hotpotqa, t2_locomo
from .base import Result, metric_cells, results_of

MOVES: dict[str, tuple[Outcome, Outcome]] = {
    "D->C": ("declined", "correct"),
    "W->C": ("wrong", "correct"),
    "C->W": ("correct", "wrong"),
    "C->D": ("correct", "declined"),
}


def groups(ctx: TableContext) -> dict[str, list[RunSpec]]:
    """Row label -> the GRSE training runs (one per seed) it reads."""
    rows: dict[str, list[RunSpec]] = {}
    for actor in ctx.actors:
        rows[f"HotpotQA [{actor.label}]"] = t1_hotpotqa.trained_runs(ctx, actor, "GRSE")
        for category in t2_locomo.CATEGORIES:
            rows[f"LoCoMo {category} [{actor.label}]"] = t2_locomo.trained_runs(
                ctx, actor, "GRSE", category
            )
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs += t1_hotpotqa.layout(ctx)["GRSE"][actor.label]
        runs += [t2_locomo.empty_run(ctx, actor, c) for c in t2_locomo.trained_categories(ctx)]
    for specs in groups(ctx).values():
        runs += specs
    return unique_runs(runs)


def _move(name: str) -> Callable[[RunOutcome], float | None]:
    before, after = MOVES[name]

    def read(outcome: RunOutcome) -> float | None:
        comparison: LibraryComparison | None = outcome.comparison
        if comparison is None:
            return None
        row = comparison.table.counts.get(before)
        return float(row.get(after, 0)) if row is not None else 0.0

    return read


def _delta_f1(outcome: RunOutcome) -> float | None:
    if outcome.summary is None or outcome.start_summary is None:
        return None
    after = outcome.summary.overall.metrics.get("f1")
    before = outcome.start_summary.overall.metrics.get("f1")
    return None if after is None or before is None else (after - before) * 100


def _dc_without_evidence(outcome: RunOutcome) -> float | None:
    if outcome.comparison is None or outcome.summary is None:
        return None
    if not outcome.run_id.startswith("locomo-"):
        return None
    records = EvalFolder(Path(outcome.summary.out_dir)).read_predictions()
    count = 0
    for move in outcome.comparison.transitions:
        if (move.before, move.after) != ("declined", "correct"):
            continue
        record = records.get(move.question_id)
        steps = record.rollout.steps if record is not None and record.rollout else []
        if not steps or not cites_dialogue(steps[0].output):
            count += 1
    return float(count)


def _citation_rate(outcome: RunOutcome) -> float | None:
    """Share (%) of the trained team's test answers whose retriever output cites a dialogue
    id (`evidence_citation_rate`)."""
    if outcome.summary is None:
        raise NotMeasured("no test evaluation")
    records = EvalFolder(Path(outcome.summary.out_dir)).read_predictions().values()
    outputs = [r.rollout.steps[0].output for r in records if r.rollout and r.rollout.steps]
    if not outputs:
        raise NotMeasured("no recorded retriever output")
    return 100.0 * evidence_citation_rate(outputs)


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = [Column(key=m, label=m) for m in MOVES]
    columns += [
        Column(key="delta_f1", label="ΔF1"),
        Column(key="dc_no_evidence", label="#D->C without evidence"),
        Column(key="cited", label="evidence cited %"),
    ]
    metrics: dict[str, Metric] = {m: _move(m) for m in MOVES}
    metrics["delta_f1"] = _delta_f1
    evidence: dict[str, Metric] = {
        "dc_no_evidence": _dc_without_evidence,
        "cited": _citation_rate,
    }
    rows, bars = [], {}
    for label, specs in groups(ctx).items():
        if not specs:  # a LoCoMo category the smoke size does not train
            not_trained = Cell(text=t2_locomo.NOT_TRAINED)
            rows.append(Row(label=label, cells={c.key: not_trained for c in columns}))
            continue
        outcomes = results_of(specs, results)
        cells = metric_cells(ctx.paper, label, outcomes, metrics)
        if label.startswith("LoCoMo"):
            cells |= metric_cells(ctx.paper, label, outcomes, evidence)
        else:
            cells |= {key: Cell(text="n/a (no dialogue ids)") for key in evidence}
        rows.append(Row(label=label, cells=cells))
        bars[label] = {m: cells[m].mean for m in MOVES}
    figure = figures.transition_bars(
        bars, ctx.root / "table3-transitions.png", "Answer transitions, empty -> GRSE"
    )
    notes = [
        "#D->C without evidence: D->C questions whose retriever output cites no dialogue id "
        "(LoCoMo only); evidence cited %: the trained team's test answers whose retriever "
        "output cites a dialogue id (evidence_citation_rate)",
    ]
    return [
        TableContent(
            columns=columns,
            rows=rows,
            notes=notes,
            figures=[str(figure)],
            header=t2_locomo.smoke_header(ctx),
        )
    ]
