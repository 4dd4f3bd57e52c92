"""Table 11: training cost per role of T1's HotpotQA training runs: calls, prompt and
completion tokens per role (the critic's and optimizer's too, which the paper could not log),
model time and the training wall time."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.table import Column, Metric, NotMeasured, Row, TableContent

from . import t1_hotpotqa
from .base import Result, metric_cells, results_of

ROLES = ("actor", "critic", "optimizer")


def plan(ctx: TableContext) -> list[RunSpec]:
    layout = t1_hotpotqa.layout(ctx)
    return unique_runs(
        s
        for actor in ctx.actors
        for label in t1_hotpotqa.TRAINED
        for s in layout[label][actor.label]
    )


def _role(role: str, field: str, scale: float = 1.0) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        usage = outcome.usage.get("roles", {}).get(role)
        if usage is None:
            return None
        return float(usage.get(field, 0)) / scale

    return read


def _stage(stage: str, field: str) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        tokens = outcome.actor_stages.get(stage)
        if tokens is None:
            raise NotMeasured("no per-stage actor usage recorded")
        return float(getattr(tokens, field)) / 1000

    return read


def _training_minutes(outcome: RunOutcome) -> float | None:
    return None if outcome.training_s is None else outcome.training_s / 60.0


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    named: dict[str, tuple[str, Metric]] = {}
    for role in ROLES:
        named[f"{role}:calls"] = (f"{role} calls", _role(role, "calls"))
        named[f"{role}:prompt"] = (f"{role} prompt k tok", _role(role, "prompt_tokens", 1000))
        named[f"{role}:completion"] = (
            f"{role} completion k tok",
            _role(role, "completion_tokens", 1000),
        )
        named[f"{role}:time"] = (f"{role} model min", _role(role, "wall_time_s", 60))
    for stage in ("rollouts", "validation"):
        named[f"actor_{stage}:prompt"] = (
            f"actor {stage} prompt k tok",
            _stage(stage, "prompt_tokens"),
        )
        named[f"actor_{stage}:completion"] = (
            f"actor {stage} completion k tok",
            _stage(stage, "completion_tokens"),
        )
    named["training"] = ("training min", _training_minutes)
    columns = [Column(key=key, label=label) for key, (label, _) in named.items()]
    metrics = {key: metric for key, (_, metric) in named.items()}
    rows = []
    for actor in ctx.actors:
        for label in t1_hotpotqa.TRAINED:
            outcomes = results_of(t1_hotpotqa.trained_runs(ctx, actor, label), results)
            cells = metric_cells(ctx.paper, label, outcomes, metrics)
            rows.append(Row(label=f"{label} [{actor.label}]", cells=cells))
    notes = [
        "role usage covers every session of the run folder: training and the tests of the "
        "starting and trained libraries; the actor's rollouts and validation columns are summed "
        "from the recorded steps of training alone",
    ]
    return [TableContent(columns=columns, rows=rows, notes=notes)]
