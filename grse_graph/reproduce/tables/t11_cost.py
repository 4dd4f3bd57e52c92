"""Table 11: training cost per role of T1's HotpotQA training runs: calls, prompt and
completion tokens per role (the critic's and optimizer's too, which the paper could not log),
model time and the training wall time."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.deviations import deviations
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.table import Column, Metric, NotMeasured, ResultTable, Row, collect

from . import t1_hotpotqa
from .base import Result, TableDef, results_of

ROLES = ("actor", "critic", "optimizer")


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: dict[str, RunSpec] = {}
    for actor in ctx.actors:
        layout = t1_hotpotqa.layout(ctx)
        for label in t1_hotpotqa.TRAINED:
            runs.update({s.run_id: s for s in layout[label][actor.label]})
    return list(runs.values())


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


def build(ctx: TableContext, results: Mapping[str, Result]) -> list[ResultTable]:
    metrics: dict[str, tuple[str, Metric]] = {}
    for role in ROLES:
        metrics[f"{role}:calls"] = (f"{role} calls", _role(role, "calls"))
        metrics[f"{role}:prompt"] = (f"{role} prompt k tok", _role(role, "prompt_tokens", 1000))
        metrics[f"{role}:completion"] = (
            f"{role} completion k tok",
            _role(role, "completion_tokens", 1000),
        )
        metrics[f"{role}:time"] = (f"{role} model min", _role(role, "wall_time_s", 60))
    for stage in ("rollouts", "validation"):
        metrics[f"actor_{stage}:prompt"] = (
            f"actor {stage} prompt k tok",
            _stage(stage, "prompt_tokens"),
        )
        metrics[f"actor_{stage}:completion"] = (
            f"actor {stage} completion k tok",
            _stage(stage, "completion_tokens"),
        )
    metrics["training"] = ("training min", _training_minutes)
    columns = [Column(key=key, label=label) for key, (label, _) in metrics.items()]
    rows = []
    for actor in ctx.actors:
        for label in t1_hotpotqa.TRAINED:
            specs = [s for s in t1_hotpotqa.trained_runs(ctx, actor, label)]
            outcomes = results_of(specs, results)
            cells = {
                key: collect(outcomes, metric, paper=ctx.paper.value(label, key))
                for key, (_, metric) in metrics.items()
            }
            rows.append(Row(label=f"{label} [{actor.label}]", cells=cells))
    return [
        ResultTable(
            table="table11",
            title="Table 11: training cost per role (HotpotQA, one training run incl. its tests)",
            header=deviations(ctx, plan(ctx)),
            columns=columns,
            rows=rows,
            paper_where=ctx.paper.where,
            notes=[
                "role usage covers every session of the run folder: training and the tests of "
                "the starting and trained libraries; the actor's rollouts and validation "
                "columns are summed from the recorded steps of training alone",
            ],
        )
    ]


TABLE11 = TableDef(
    name="table11",
    script="table11_cost.py",
    title="Table 11: training cost",
    reproduces=(
        "Table 11 of the GRSE paper: calls, prompt and completion tokens and model time per role "
        "(actor, critic, optimizer) and the training wall time of GRSE, GRSE w/o structure and "
        "MASkills on HotpotQA"
    ),
    cost="nothing beyond Table 1: it reads its training runs (made here if missing)",
    tasks=("hotpotqa",),
    papers=("table11",),
    plan=plan,
    build=build,
)
