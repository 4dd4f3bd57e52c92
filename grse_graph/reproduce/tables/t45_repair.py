"""Tables 4 and 5: repair of a planted (perturbed) library. Table 4: test score of the planted
and the trained libraries per method, the difference, the abstention share and what was
removed and kept; Table 5: per planted skill the critic's first credit u1 (its sign) and its
fate per method, with the right signs and the helpful-harmful separation. Figure 4: the
planted skills' utility over iterations. Reads the planted-library format of
`grse_graph/tasks/planted.py` (default: the demo's `planted.json`)."""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grse_graph.reproduce import figures
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.specs import planted_spec, train_spec
from grse_graph.reproduce.table import Cell, Column, Metric, Row, TableContent
from grse_graph.tasks.planted import PlantedLibrary, demo_planted, load_planted
from grse_graph.training.config import LOOP_ADDITIONS, TrainConfig, method_additions
from grse_graph.training.demo import repair_config
from grse_graph.training.repair import PlantedSkillOutcome, separation

from .base import Result, metric_cells, paper_row, results_of

METHODS = {
    "GRSE": ("grse", False),
    "GRSE + probe credit": ("grse", True),
    "MASkills": ("maskills", False),
}
"""Row label -> (credit method, probe credit on): the repair benchmark's three methods."""


def planted_library(ctx: TableContext) -> PlantedLibrary:
    return load_planted(ctx.planted) if ctx.planted is not None else demo_planted()


def _config(ctx: TableContext, planted: PlantedLibrary, method: str, probe: bool) -> TrainConfig:
    config = repair_config(planted, method, probe=probe)
    dumped: dict[str, Any] = config.model_dump(mode="json")
    dumped["data"] = ctx.data.get(planted.task)
    if ctx.paper_mode:
        # Paper mode fills every project addition with off; the repair config names them on.
        for name in LOOP_ADDITIONS:
            dumped.pop(name, None)
        for name in method_additions(config.method):
            dumped["method"].pop(name, None)
        dumped["paper_mode"] = True
    if not ctx.smoke:
        return _overridden(ctx, dumped)
    smoke = ctx.settings.smoke
    dumped.update(
        iterations=smoke.iterations,
        batch_size=smoke.train_batch,
        validation_size=smoke.validation_questions,
    )
    if "group_size" in dumped["method"]:
        dumped["method"]["group_size"] = smoke.group_size
    if dumped.get("probe"):
        dumped["probe"].update(questions=smoke.probe_questions, budget=smoke.probe_budget)
    return _overridden(ctx, dumped)


def _overridden(ctx: TableContext, dumped: dict[str, Any]) -> TrainConfig:
    """The config with the command line's loop sizes (`--iterations` ...) over it."""
    for key, value in ctx.train_overrides.items():
        if key == "group_size":
            if "group_size" in dumped["method"]:
                dumped["method"]["group_size"] = value
        else:
            dumped[key] = value
    return TrainConfig.model_validate(dumped)


def planted_eval(ctx: TableContext, actor: Actor) -> RunSpec:
    planted = planted_library(ctx)
    return planted_spec(ctx, actor, planted.task, str(planted.source))


def method_runs(ctx: TableContext, actor: Actor, label: str) -> list[RunSpec]:
    planted = planted_library(ctx)
    method, probe = METHODS[label]
    start = planted_eval(ctx, actor)
    variant = "probe" if probe else "default"  # a repair variant, not one of GRSE's (Table 10)
    return [
        train_spec(
            ctx,
            actor,
            planted.task,
            None,
            method,
            variant,
            seed,
            start=start,
            planted=str(planted.source),
            config=_config(ctx, planted, method, probe).model_copy(update={"seed": seed}),
        )
        for seed in ctx.seeds
    ]


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs.append(planted_eval(ctx, actor))
        runs += [s for label in METHODS for s in method_runs(ctx, actor, label)]
    return unique_runs(runs)


def _comparison_metric(field: str) -> Any:
    def read(outcome: RunOutcome) -> float | None:
        comparison = outcome.comparison
        if comparison is None:
            return None
        if field == "before":
            return comparison.mean_before * 100
        if field == "after":
            return comparison.mean_after * 100
        return comparison.paired.difference * 100

    return read


def _abstention(outcome: RunOutcome) -> float | None:
    summary = outcome.summary
    if summary is None or summary.finished == 0:
        return None
    return summary.overall.states.get("declined", 0.0) * 100


def _count(kind: str, fates: tuple[str, ...]) -> Any:
    def read(outcome: RunOutcome) -> float | None:
        chosen = [o for o in outcome.planted if o.kind == kind]
        if not chosen:
            return None
        return float(sum(o.fate in fates for o in chosen))

    return read


def _table4(ctx: TableContext, results: Mapping[str, Result]) -> TableContent:
    columns = [
        Column(key="planted", label="planted score"),
        Column(key="trained", label="trained score"),
        Column(key="difference", label="difference"),
        Column(key="abstention", label="Abst. %"),
        Column(key="harmful_removed", label="harmful removed"),
        Column(key="helpful_kept", label="helpful kept"),
    ]
    scores: dict[str, Metric] = {
        "planted": _comparison_metric("before"),
        "trained": _comparison_metric("after"),
        "difference": _comparison_metric("difference"),
        "abstention": _abstention,
    }
    counts: dict[str, Metric] = {
        "harmful_removed": _count("harmful", ("pruned", "merged")),
        "helpful_kept": _count("helpful", ("kept", "refined")),
    }
    paper = ctx.paper_of("table4")
    rows = []
    for actor in ctx.actors:
        for label in METHODS:
            outcomes = results_of(method_runs(ctx, actor, label), results)
            cells = metric_cells(paper, label, outcomes, scores)
            cells |= metric_cells(paper, label, outcomes, counts, digits=0)
            rows.append(Row(label=f"{label} [{actor.label}]", cells=cells))
    notes = [
        f"planted library: {planted_library(ctx).source} (task {planted_library(ctx).task})",
        "score = mean test reward x 100; difference = trained - planted (paired)",
    ]
    return TableContent(columns=columns, rows=rows, notes=notes)


def _skill_outcomes(outcomes: list[Result], agent: str, skill: str) -> list[PlantedSkillOutcome]:
    found = []
    for result in outcomes:
        if isinstance(result, RunOutcome):
            found += [o for o in result.planted if o.agent == agent and o.skill == skill]
    return found


def _skill_cells(outcomes: list[Result], agent: str, skill: str) -> dict[str, Cell]:
    failures = [f"run {r.run_id}: {r.error}" for r in outcomes if isinstance(r, RunFailure)]
    mine = _skill_outcomes(outcomes, agent, skill)
    if not mine:
        reason = failures or ["no run recorded this planted skill"]
        return {"u1": Cell(failures=reason), "fate": Cell(failures=reason)}
    u1 = [o.u1 for o in mine if o.u1 is not None]
    u1_cell = Cell(values=u1, failures=failures, digits=2)
    if not u1:
        u1_cell = Cell(
            text="silent (no credit)" + (f"; {len(failures)} failed" if failures else "")
        )
    fates = ", ".join(
        o.fate + (f"@{o.fate_iteration}" if o.fate_iteration is not None else "") for o in mine
    )
    # A run without a credit for the skill has no sign to be right or wrong.
    credited = [o.sign_correct for o in mine if o.sign_correct is not None]
    signs = f"sign right {sum(credited)}/{len(credited)}" if credited else "no sign"
    return {"u1": u1_cell, "fate": Cell(text=f"{fates}; {signs}")}


def _summary_cells(outcomes: list[Result], paper: Any) -> dict[str, Cell]:
    failures = [f"run {r.run_id}: {r.error}" for r in outcomes if isinstance(r, RunFailure)]
    finished = [r for r in outcomes if isinstance(r, RunOutcome)]
    if not finished:
        return {"u1": Cell(failures=failures or ["not run"]), "fate": Cell(failures=failures)}
    rights = [sum(o.sign_correct is True for o in r.planted) for r in finished]
    total = len(finished[0].planted)
    seps = [s for s in (separation(list(r.planted)) for r in finished) if s is not None]
    sep_text = (
        f"separation {statistics.fmean(seps):+.2f}"
        if seps
        else "separation n/a (a kind uncredited)"
    )
    return {
        "u1": Cell(
            text=f"right signs {'/'.join(map(str, rights))} of {total}; {sep_text}",
            paper=paper,
        ),
        "fate": Cell(
            text=f"{len(finished)} run(s)" + (f", {len(failures)} failed" if failures else "")
        ),
    }


def _table5(ctx: TableContext, results: Mapping[str, Result]) -> TableContent:
    planted = planted_library(ctx)
    columns = []
    by_method: dict[str, list[Result]] = {}
    for actor in ctx.actors:
        for label in METHODS:
            key = f"{label} [{actor.label}]"
            by_method[key] = results_of(method_runs(ctx, actor, label), results)
            columns += [
                Column(key=f"{key}:u1", label=f"u1 {key}", paper=False),
                Column(key=f"{key}:fate", label=f"fate {key}", paper=False),
            ]
    rows = []
    for entry in planted.skills:
        cells = {}
        for key, outcomes in by_method.items():
            for part, cell in _skill_cells(outcomes, entry.agent, entry.skill).items():
                cells[f"{key}:{part}"] = cell
        rows.append(Row(label=f"{entry.agent}/{entry.skill} ({entry.kind})", cells=cells))
    summary: dict[str, Cell] = {}
    for key, outcomes in by_method.items():
        label = paper_row(key)
        paper = ctx.paper_of("table5").values.get(label)
        paper_text = (
            f"{paper.get('right_signs')}, separation {paper.get('separation')}" if paper else None
        )
        for part, cell in _summary_cells(outcomes, paper_text).items():
            summary[f"{key}:{part}"] = cell
    rows.append(Row(label="right signs, separation", cells=summary))
    figure = _figure(ctx, by_method)
    notes = [
        "u1: the critic's aggregated first-plan credit, mean ± SD over seeds; fate per seed "
        "(@ the iteration whose gate accepted it)",
        "paper (right signs, separation): "
        + "; ".join(
            f"{label}: {v.get('right_signs')}, {v.get('separation')}"
            for label, v in ctx.paper_of("table5").values.items()
            if "right_signs" in v
        ),
    ]
    drawn = [str(figure)] if figure is not None else []
    return TableContent(columns=columns, rows=rows, notes=notes, figures=drawn)


def _figure(ctx: TableContext, by_method: Mapping[str, list[Result]]) -> Path | None:
    series: dict[str, list[tuple[int, float | None]]] = {}
    planted = planted_library(ctx)
    for key, outcomes in by_method.items():
        first = next((r for r in outcomes if isinstance(r, RunOutcome)), None)
        if first is None:
            continue
        for entry in planted.skills:
            points = [
                (p.iteration, p.utility)
                for p in first.utilities
                if p.agent == entry.agent and p.skill == entry.skill
            ]
            if points:
                series[f"{key.split(' [')[0]}: {entry.skill} ({entry.kind})"] = points
    if not series:
        return None
    return figures.utility_trajectories(
        series,
        ctx.root / "table5-utilities.png",
        "Figure 4: planted skills' utility over iterations (first seed)",
    )


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    return [_table4(ctx, results), _table5(ctx, results)]
