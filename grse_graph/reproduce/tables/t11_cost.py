"""Table 11: training cost of the main-result runs, GRSE beside MASkills on HotpotQA and LoCoMo
(LoCoMo: the four per-category runs summed), per actor, mean ± SD over seeds: the actor's
tokens (both agents, input and output) of the training rollouts, of validation and in all, and
the training wall time. The critic's and optimizer's calls and tokens, which the paper did not
log, follow as columns of ours; GRSE w/o structure as a row of ours. Reads T1's and T2's
training runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.table import Cell, Metric, NotMeasured, TableContent

from . import t1_hotpotqa, t2_locomo
from .base import Result, actor_lines, layout_column, layout_row, paper_actor, results_of

METHODS = ("MASkills", "GRSE")
"""The paper's rows of each task and actor (grse.txt:427)."""
EXTRA = ("GRSE w/o structure",)
"""Rows of ours: the other main-result method."""
TASKS = {"hotpotqa": "HotpotQA", "locomo": "LoCoMo"}
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


def _runs(ctx: TableContext, actor: Actor, task: str, method: str) -> list[list[RunSpec]]:
    """Per pooled part (HotpotQA: one; LoCoMo: each trained category) the runs per seed."""
    if task == "hotpotqa":
        return [t1_hotpotqa.trained_runs(ctx, actor, method)]
    parts = [
        t2_locomo.trained_runs(ctx, actor, method, c) for c in t2_locomo.trained_categories(ctx)
    ]
    return [runs for runs in parts if runs]


def row_key(task: str, paper: str | None, actor: Actor, method: str) -> str:
    """The paper's row key (`LoCoMo|Qwen3.8|GRSE`): the task, the paper's actor (or ours past
    them), the method."""
    return f"{TASKS[task]}|{paper or actor.label}|{method}"


def _label(key: str) -> str:
    task, actor, method = key.split("|")
    return f"{task}, {actor}: {method}"


def groups(ctx: TableContext) -> dict[str, list[list[RunSpec]]]:
    """Row key -> per pooled part the training runs per seed."""
    rows: dict[str, list[list[RunSpec]]] = {}
    for task in TASKS:
        for actor in ctx.actors:
            paper = paper_actor(ctx, actor)
            for method in (*METHODS, *EXTRA):
                rows[row_key(task, paper, actor, method)] = _runs(ctx, actor, task, method)
    return rows


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
        total = 0.0
        for results in parts:
            result = results[min(position, len(results) - 1)]
            if isinstance(result, RunFailure):
                cell.failures.append(f"run {result.run_id}: {result.error}")
                break
            try:
                value = metric(result)
            except NotMeasured as reason:
                cell.failures.append(f"run {result.run_id}: {reason}")
                break
            if value is None:
                cell.failures.append(f"run {result.run_id} did not measure this")
                break
            total += value
        else:
            cell.values.append(total)
    return cell


def smoke_header(ctx: TableContext) -> list[str]:
    trained = t2_locomo.trained_categories(ctx)
    if trained == t2_locomo.CATEGORIES:
        return []
    return [
        f"SMOKE SIZE: the LoCoMo rows sum the runs of {', '.join(trained) or 'no category'} "
        "only (the categories trained at this size; the paper sums all four)"
    ]


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    named = {**PAPER_COLUMNS, **OUR_COLUMNS}
    columns = [layout_column(ctx.paper, key, label) for key, (label, _, _) in named.items()]
    rows = []
    for key, parts in groups(ctx).items():
        if not parts:  # no LoCoMo category trained at this size
            cells = {c.key: Cell.skipped_at_size(ctx.paper.value(key, c.key)) for c in columns}
        else:
            outcomes = [results_of(specs, results) for specs in parts]
            cells = {}
            for column, (_, metric, digits) in named.items():
                cells[column] = summed(outcomes, metric, digits)
                cells[column].paper = ctx.paper.value(key, column)
        rows.append(layout_row(ctx.paper, key, _label(key), cells))
    notes = [
        "actor tokens: prompt and completion tokens of both agents, summed from the recorded "
        "steps of the training rollouts and of validation (the tests excluded), in millions; "
        "training time: the training wall time in hours",
        "critic and optimizer columns (ours; the paper did not log them): every session of the "
        "run folder, training and the tests of the starting and trained libraries",
        "GRSE w/o structure rows: ours (the paper's table compares GRSE and MASkills)",
    ]
    header = [*actor_lines(ctx), *smoke_header(ctx)]
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
