"""Table 11: training cost of the main-result runs, GRSE beside MASkills on HotpotQA and LoCoMo
(LoCoMo: the four per-category runs summed), per actor, mean ± SD over seeds: the actor's
tokens (both agents, input and output) of the training rollouts, of validation and in all, and
the training wall time. The critic's and optimizer's calls and tokens, which the paper did not
log, follow as columns of ours; GRSE w/o structure as a row of ours. Reads T1's and T2's
training runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.table import (
    Cell,
    Metric,
    NotMeasured,
    TableContent,
    measured,
    seed_result,
)

from . import t2_locomo
from .base import Result, RowName, actor_lines, layout_column, layout_row, results_of, task_rows

METHODS = ("MASkills", "GRSE")
"""The paper's rows of each task and actor (grse.txt:427)."""
EXTRA = ("GRSE w/o structure",)
"""Rows of ours: the other main-result method."""
ROLES = ("critic", "optimizer")
"""The roles whose usage the paper did not log (its columns are the actor's)."""


def _stage_tokens(*stages: str) -> Metric:
    """The actor's prompt and completion tokens (millions) of the training stages."""

    def read(outcome: RunOutcome) -> float | None:
        total = 0
        for stage in stages:
            tokens = outcome.actor_stages.get(stage)
            if tokens is None:
                raise NotMeasured("no per-stage actor usage recorded")
            total += tokens.prompt_tokens + tokens.completion_tokens
        return total / 1e6

    return read


def _training_hours(outcome: RunOutcome) -> float | None:
    if outcome.training_s is None:
        raise NotMeasured("no training time recorded")
    return outcome.training_s / 3600.0


def _role(role: str, field: str, scale: float = 1.0) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        usage = outcome.usage.get("roles", {}).get(role)
        if usage is None:
            raise NotMeasured(f"no {role} usage recorded")
        return float(usage.get(field, 0)) / scale

    return read


PAPER_COLUMNS: dict[str, tuple[str, Metric, int]] = {
    "rollout_tokens": ("Rollout actor tokens (M)", _stage_tokens("rollouts"), 3),
    "validation_tokens": ("Validation actor tokens (M)", _stage_tokens("validation"), 3),
    "actor_tokens": ("Actor tokens (M)", _stage_tokens("rollouts", "validation"), 3),
    "training_time": ("Training time (h)", _training_hours, 2),
}
"""The paper's columns (key -> label, metric, digits): the actor's training tokens, time."""
OUR_COLUMNS: dict[str, tuple[str, Metric, int]] = {
    f"{role}:{field}": (f"{role} {name}", _role(role, field, scale), digits)
    for role in ROLES
    for field, name, scale, digits in (
        ("calls", "calls", 1.0, 0),
        ("prompt_tokens", "prompt k tok", 1000.0, 1),
        ("completion_tokens", "completion k tok", 1000.0, 1),
    )
}
"""Columns of ours (training and its tests): the critic's and optimizer's usage."""


def groups(ctx: TableContext) -> dict[RowName, list[list[RunSpec]]]:
    """Each row and, per pooled part, its training runs per seed."""
    return {
        row: t2_locomo.trained_parts(ctx, actor, row.task, row.method)
        for row, actor in task_rows(ctx, (*METHODS, *EXTRA))
    }


def plan(ctx: TableContext) -> list[RunSpec]:
    runs = t2_locomo.empty_runs_of_both_tasks(ctx)
    for parts in groups(ctx).values():
        runs += [spec for specs in parts for spec in specs]
    return sorted(unique_runs(runs), key=lambda s: s.kind == "train")


def summed(parts: Sequence[Sequence[Result]], metric: Metric, digits: int) -> Cell:
    """The metric summed over the pooled parts for each seed, then mean ± SD over seeds; a
    seed one of whose parts failed is a failure of the cell."""
    cell = Cell(digits=digits)
    for position in range(max(len(results) for results in parts)):
        try:
            total = sum(measured(seed_result(results, position), metric) for results in parts)
        except NotMeasured as reason:
            cell.failures.append(str(reason))
            continue
        cell.values.append(total)
    return cell


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    named = {**PAPER_COLUMNS, **OUR_COLUMNS}
    columns = [layout_column(ctx.paper, key, label) for key, (label, _, _) in named.items()]
    rows = []
    for row, parts in groups(ctx).items():
        if not parts:  # no LoCoMo category trained at this size
            cells = {c.key: Cell.skipped_at_size(ctx.paper.value(row.key, c.key)) for c in columns}
        else:
            outcomes = [results_of(specs, results) for specs in parts]
            cells = {}
            for column, (_, metric, digits) in named.items():
                cells[column] = summed(outcomes, metric, digits)
                cells[column].paper = ctx.paper.value(row.key, column)
        rows.append(layout_row(ctx.paper, row.key, row.label, cells))
    notes = [
        "actor tokens: prompt and completion tokens of both agents, summed from the recorded "
        "steps of the training rollouts and of validation (the tests excluded), in millions; "
        "training time: the training wall time in hours",
        "critic and optimizer columns (ours; the paper did not log them): every session of the "
        "run folder, training and the tests of the starting and trained libraries",
        "GRSE w/o structure rows: ours (the paper's table compares GRSE and MASkills)",
    ]
    header = [
        *actor_lines(ctx),
        *t2_locomo.pooled_smoke_header(ctx, "the LoCoMo rows sum the runs of", "sums"),
    ]
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
