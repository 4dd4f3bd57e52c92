"""Table 9: the final skill libraries of GRSE, GRSE w/o structure and MASkills on HotpotQA and
LoCoMo (the first run of each; on LoCoMo the per-category libraries pooled), each skill typed
by the critic model at temperature 0 with one primary type: per row the number of skills, the
share of each type and the mean length (words of description and body)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, SkillType
from grse_graph.reproduce.specs import models
from grse_graph.reproduce.table import Cell, TableContent
from grse_graph.reproduce.typing_labels import UNPARSED, column

from . import t2_locomo
from .base import Result, RowName, actor_lines, layout_column, layout_row, task_rows

METHODS = ("MASkills", "GRSE w/o structure", "GRSE")
"""The rows of each task and actor (the trained rows of Tables 1 and 2)."""
COUNT, WORDS = "n", "words"
NO_SKILL = "– (no skill)"
"""A share or length of a row whose libraries hold no skill: a finished run, not a failure."""
PAPER_TYPES = ("format", "retrieval", "verification", "reasoning", "abstention")
"""The types the paper's table prints a column for (grse.txt:383)."""


def typing_spec(ctx: TableContext, actor: Actor, trained: RunSpec) -> RunSpec:
    """The typing of one training run's final libraries by the critic model."""
    return RunSpec(
        kind="typing",
        task=trained.task,
        category=trained.category,
        method="typing",
        variant=f"{trained.method}-{trained.variant}",
        actor=actor.label,
        seed=trained.seed,
        commit=ctx.commit,
        params={
            "libraries_from": trained.run_id,
            "labels": ctx.settings.typing.labels,
            "models": models(actor),
        },
        needs=(trained.run_id,),
    )


def _trained(ctx: TableContext, actor: Actor, row: RowName) -> list[RunSpec]:
    """The first runs whose libraries a row pools: HotpotQA's one, LoCoMo's per category
    (those trained at this size)."""
    return [runs[0] for runs in t2_locomo.trained_parts(ctx, actor, row.task, row.method)]


def groups(ctx: TableContext) -> dict[RowName, list[RunSpec]]:
    """Each row and its typing runs (one per pooled library)."""
    return {
        row: [typing_spec(ctx, actor, spec) for spec in _trained(ctx, actor, row)]
        for row, actor in task_rows(ctx, METHODS)
    }


def plan(ctx: TableContext) -> list[RunSpec]:
    runs = t2_locomo.empty_runs_of_both_tasks(ctx)
    for row, actor in task_rows(ctx, METHODS):
        runs += _trained(ctx, actor, row)
    for specs in groups(ctx).values():
        runs += specs
    return unique_runs(runs)


def _types(specs: Sequence[RunSpec], results: Mapping[str, Result]) -> list[SkillType] | str:
    """Every typed skill of the row's pooled libraries, or the first failure's reason."""
    types: list[SkillType] = []
    for spec in specs:
        result = results.get(spec.run_id)
        if result is None:
            return f"run {spec.run_id}: not run"
        if isinstance(result, RunFailure):
            return f"run {result.run_id}: {result.error}"
        types += result.skill_types
    return types


def row_cells(
    types: list[SkillType] | str, labels: Sequence[str], paper: Mapping[str, object]
) -> dict[str, Cell]:
    """n, the share (%) of each type and of unparsed replies, and the mean words; every cell
    FAILED with the reason when a typing run failed."""
    keys = [*labels, UNPARSED, COUNT, WORDS]

    def beside(key: str) -> float | str | None:
        value = paper.get(key)
        return value if isinstance(value, (int, float, str)) else None

    if isinstance(types, str):
        return {key: Cell(failures=[types], paper=beside(key)) for key in keys}
    cells = {COUNT: Cell(values=[float(len(types))], digits=0, paper=beside(COUNT))}
    for key in [*labels, UNPARSED]:
        if not types:
            cells[key] = Cell(text=NO_SKILL, paper=beside(key))
            continue
        share = 100.0 * sum(t.label == key for t in types) / len(types)
        cells[key] = Cell(values=[share], digits=0, paper=beside(key))
    cells[WORDS] = (
        Cell(values=[statistics.fmean(t.words for t in types)], digits=0, paper=beside(WORDS))
        if types
        else Cell(text=NO_SKILL, paper=beside(WORDS))
    )
    return cells


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    labels = ctx.settings.typing.labels
    ordered = [label for label in labels if label in PAPER_TYPES]
    ordered += [COUNT, WORDS, *(label for label in labels if label not in PAPER_TYPES), UNPARSED]
    shown = {COUNT: "n", WORDS: "Words"}
    columns = [layout_column(ctx.paper, key, shown.get(key, column(key))) for key in ordered]
    rows = []
    for row, specs in groups(ctx).items():
        paper = {c.key: ctx.paper.value(row.key, c.key) for c in columns}
        if not specs:  # no LoCoMo category trained at this size
            cells = {c.key: Cell.skipped_at_size(paper[c.key]) for c in columns}
        else:
            cells = row_cells(_types(specs, results), labels, paper)
        rows.append(layout_row(ctx.paper, row.key, row.label, cells))
    notes = [
        "type columns: % of the row's skills; Words: mean words of description and body; "
        "n: skills in the row's final libraries (LoCoMo: the per-category libraries pooled)",
        f"{column(UNPARSED)}: replies naming no type (counted, never guessed); generic: the "
        "paper's sixth type, which it gave no skill",
    ]
    header = [
        f"types: {ctx.settings.typing.why}",
        *actor_lines(ctx),
        *t2_locomo.pooled_smoke_header(ctx, "the LoCoMo rows pool the libraries of", "pools"),
    ]
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
