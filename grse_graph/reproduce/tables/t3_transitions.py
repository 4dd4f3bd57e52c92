"""Table 3: answer transitions from the empty to the final library, per task and actor, for
MASkills and GRSE (the first run of each). Each test question is declined, wrong or correct
before and after; Δ is the change in mean token F1, and D->C, W->C and C->W are the
contributions to Δ of the questions making that move. Decl. and No ev. (LoCoMo: no dialogue
turn cited by the retriever) are shares of questions, before -> after; #D->C counts the
declined-to-correct questions, those without cited evidence in brackets.

As the paper's caption says, the "before" answers of both methods are those of iteration 0 of
the same GRSE run (its starting libraries' test), and the LoCoMo rows pool the four per-category
runs of each method; the per-category rows follow as extras. Reads T1's and T2's runs."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from grse_graph.evaluation.records import PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.evaluation.transitions import Outcome, answer_outcome
from grse_graph.metrics.analysis import cites_dialogue
from grse_graph.reproduce import figures
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import PaperValue
from grse_graph.reproduce.table import Cell, TableContent

from . import t1_hotpotqa, t2_locomo
from .base import Result, RowName, actor_lines, layout_column, layout_row, paper_actor, task_rows

METHODS = ("MASkills", "GRSE")
"""The rows of each group, in the paper's order."""
MOVES: dict[str, tuple[Outcome, Outcome]] = {
    "D->C": ("declined", "correct"),
    "W->C": ("wrong", "correct"),
    "C->W": ("correct", "wrong"),
}
"""The moves whose contribution to Δ the paper prints, by column key."""
DELTA, DECL, NO_EV, N_DC = "delta_f1", "declined", "no_evidence", "dc_count"
COLUMNS = {
    DELTA: "Δ",
    "D->C": "D→C",
    "W->C": "W→C",
    "C->W": "C→W",
    DECL: "Decl.",
    NO_EV: "No ev.",
    N_DC: "#D→C",
}
"""The paper's columns (grse.txt:213): key -> the paper's label."""
NO_RETRIEVAL = "–"
"""The paper's cell for No ev. and #D->C on HotpotQA (no retrieval step)."""


@dataclass(frozen=True)
class Pair:
    """One test question under the empty library (before) and the final library (after)."""

    before: PredictionRecord
    after: PredictionRecord


class Unpaired(Exception):
    """The runs of a row cannot be paired question by question (the reason)."""


@dataclass(frozen=True)
class Group:
    """One row's runs: for each pooled part (HotpotQA: one; LoCoMo: each trained category),
    the GRSE run whose iteration 0 gives the "before" answers and the run whose final
    libraries give the "after" answers."""

    task: str
    parts: tuple[tuple[RunSpec, RunSpec], ...]
    """(GRSE run, the row's method run) per pooled part."""

    def runs(self) -> list[RunSpec]:
        return unique_runs(spec for part in self.parts for spec in part)


def _hotpot(ctx: TableContext, actor: Actor, method: str) -> Group:
    grse = t1_hotpotqa.trained_runs(ctx, actor, "GRSE")[0]
    mine = t1_hotpotqa.trained_runs(ctx, actor, method)[0]
    return Group("hotpotqa", ((grse, mine),))


def _locomo(ctx: TableContext, actor: Actor, method: str, categories: Sequence[str]) -> Group:
    parts = []
    for category in categories:
        grse = t2_locomo.trained_runs(ctx, actor, "GRSE", category)
        mine = t2_locomo.trained_runs(ctx, actor, method, category)
        if grse and mine:
            parts.append((grse[0], mine[0]))
    return Group("locomo", tuple(parts))


def groups(ctx: TableContext) -> dict[RowName, Group]:
    """Each row and its runs (first seed): the paper's rows in its order (HotpotQA, then
    LoCoMo, each per actor), then the per-category extras (a category the smoke size does not
    train has no parts)."""
    rows: dict[RowName, Group] = {}
    trained = t2_locomo.trained_categories(ctx)
    for row, actor in task_rows(ctx, METHODS):
        rows[row] = (
            _hotpot(ctx, actor, row.method)
            if row.task == "hotpotqa"
            else _locomo(ctx, actor, row.method, trained)
        )
    for actor in ctx.actors:
        name = paper_actor(ctx, actor) or actor.label
        for category in t2_locomo.CATEGORIES:
            for method in METHODS:
                rows[RowName("locomo", name, method, category)] = _locomo(
                    ctx, actor, method, [category]
                )
    return rows


def plan(ctx: TableContext) -> list[RunSpec]:
    runs = t2_locomo.empty_runs_of_both_tasks(ctx)
    for group in groups(ctx).values():
        runs += group.runs()
    return sorted(unique_runs(runs), key=lambda s: s.kind == "train")


def _outcome(spec: RunSpec, results: Mapping[str, Result]) -> RunOutcome:
    result = results.get(spec.run_id)
    if result is None:
        raise Unpaired(f"run {spec.run_id}: not run")
    if isinstance(result, RunFailure):
        raise Unpaired(f"run {spec.run_id}: {result.error}")
    return result


def _predictions(out_dir: str | None, what: str) -> dict[str, PredictionRecord]:
    if not out_dir:
        raise Unpaired(f"{what}: no test evaluation")
    return EvalFolder(Path(out_dir)).read_predictions()


def pairs(group: Group, results: Mapping[str, Result]) -> list[Pair]:
    """Every test question of the row's pooled parts, paired: before from the GRSE run's
    iteration 0 (its starting libraries' test), after from the row's run. `Unpaired` (the
    reason) when a run failed or the two tests hold other questions."""
    paired: list[Pair] = []
    for grse, mine in group.parts:
        start = _outcome(grse, results).start_summary
        before = _predictions(start.out_dir if start else None, f"run {grse.run_id} iteration 0")
        final = _outcome(mine, results).summary
        after = _predictions(final.out_dir if final else None, f"run {mine.run_id}")
        if set(before) != set(after):
            raise Unpaired(
                f"run {mine.run_id} answered {len(after)} test questions, the GRSE run's "
                f"iteration 0 {len(before)} other ones"
            )
        paired += [Pair(before[qid], after[qid]) for qid in before]
    if not paired:
        raise Unpaired("no test question")
    return paired


def _f1(record: PredictionRecord) -> float:
    if record.failed:
        return 0.0
    f1 = record.metrics.get("f1")
    if f1 is None:
        raise Unpaired(f"question {record.id} has no token F1")
    return f1


def _no_evidence(record: PredictionRecord) -> bool:
    """The retriever (the first agent) cited no dialogue turn (a failed question neither)."""
    steps = record.rollout.steps if record.rollout is not None else []
    return not steps or not cites_dialogue(steps[0].output)


def delta(pairs: Sequence[Pair]) -> float:
    """Change in mean token F1, in points."""
    return 100.0 * math.fsum(_f1(p.after) - _f1(p.before) for p in pairs) / len(pairs)


def _moved(pairs: Sequence[Pair], move: tuple[Outcome, Outcome]) -> list[Pair]:
    return [p for p in pairs if (answer_outcome(p.before), answer_outcome(p.after)) == move]


def contribution(pairs: Sequence[Pair], move: tuple[Outcome, Outcome]) -> float:
    """The part of Δ (points) from the questions making `move`: their F1 changes summed over
    all questions of the row. The contributions of all nine moves add up to Δ."""
    moved = _moved(pairs, move)
    return 100.0 * math.fsum(_f1(p.after) - _f1(p.before) for p in moved) / len(pairs)


def share(pairs: Sequence[Pair], side: str, test: str) -> float:
    """Percentage of questions declined (`test` "declined") or without evidence ("no_ev")
    under the library `side` ("before" or "after")."""
    records = [getattr(p, side) for p in pairs]
    if test == "declined":
        hits = sum(answer_outcome(r) == "declined" for r in records)
    else:
        hits = sum(_no_evidence(r) for r in records)
    return 100.0 * hits / len(records)


def declined_to_correct(pairs: Sequence[Pair]) -> tuple[int, int]:
    """The D->C questions, and how many of them the final answer reached without cited
    evidence."""
    moved = _moved(pairs, MOVES["D->C"])
    return len(moved), sum(_no_evidence(p.after) for p in moved)


def _arrow(pairs: Sequence[Pair], test: str) -> str:
    return f"{share(pairs, 'before', test):.0f}→{share(pairs, 'after', test):.0f}"


def row_cells(
    group: Group, results: Mapping[str, Result], paper: Callable[[str], PaperValue]
) -> dict[str, Cell]:
    """The row's cells, each beside the paper's value of its column (`paper`); every cell
    FAILED with the reason when the row's questions cannot be paired."""
    try:
        paired = pairs(group, results)
        values = {DELTA: delta(paired)}
        values |= {name: contribution(paired, move) for name, move in MOVES.items()}
        texts = {DECL: _arrow(paired, "declined")}
        if group.task == "locomo":
            count, bare = declined_to_correct(paired)
            texts |= {NO_EV: _arrow(paired, "no_ev"), N_DC: f"{count} ({bare})"}
        else:
            texts |= {NO_EV: NO_RETRIEVAL, N_DC: NO_RETRIEVAL}
    except Unpaired as reason:
        return {key: Cell(failures=[str(reason)], paper=paper(key)) for key in COLUMNS}
    cells = {
        key: Cell(values=[value], signed=True, paper=paper(key)) for key, value in values.items()
    }
    return cells | {key: Cell(text=text, paper=paper(key)) for key, text in texts.items()}


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = [layout_column(ctx.paper, key, label) for key, label in COLUMNS.items()]
    rows, bars = [], {}
    for name, group in groups(ctx).items():
        paper = partial(ctx.paper.value, name.key)
        if not group.parts:  # a LoCoMo category the smoke size does not train
            skipped = {key: Cell.skipped_at_size(paper(key)) for key in COLUMNS}
            rows.append(layout_row(ctx.paper, name.key, name.label, skipped))
            continue
        cells = row_cells(group, results, paper)
        rows.append(layout_row(ctx.paper, name.key, name.label, cells))
        bars[name.label] = {COLUMNS[move]: cells[move].mean for move in MOVES}
    figure = figures.transition_bars(
        bars,
        ctx.root / "table3-transitions.png",
        "Contributions to ΔF1 by answer transition, empty -> final library",
        ylabel="points of F1",
    )
    notes = [
        "Δ, D→C, W→C, C→W: points of mean token F1 (×100); D→C, W→C and C→W are the parts of "
        "Δ from the questions making that move (the other six moves make up the rest)",
        "Decl., No ev.: % of test questions, empty -> final library (rounded as the paper)",
        "#D→C: declined-to-correct questions (in brackets: those whose final retriever output "
        "cites no dialogue turn)",
        "before: iteration 0 of the GRSE run (its starting libraries' test), for both methods; "
        "first run of each method",
        "rows after the pooled ones: each LoCoMo category's own library (not in the paper's table)",
    ]
    header = [
        *actor_lines(ctx),
        *t2_locomo.pooled_smoke_header(ctx, "the pooled LoCoMo rows pool", "pools"),
    ]
    return [
        TableContent(columns=columns, rows=rows, notes=notes, figures=[str(figure)], header=header)
    ]
