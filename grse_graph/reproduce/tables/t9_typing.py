"""Table 9: the skills GRSE learned on HotpotQA (T1's runs), typed by the critic model at
temperature 0: per type its share of the skills and their mean length in words."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunOutcome
from grse_graph.reproduce.specs import models
from grse_graph.reproduce.table import Column, Metric, NotMeasured, Row, TableContent, collect
from grse_graph.reproduce.typing_labels import UNPARSED

from . import t1_hotpotqa
from .base import Result, results_of


def typing_runs(ctx: TableContext, actor: Actor) -> list[RunSpec]:
    return [
        RunSpec(
            kind="typing",
            task=spec.task,
            method="typing",
            variant=spec.method,
            actor=actor.label,
            seed=spec.seed,
            commit=ctx.commit,
            params={
                "libraries_from": spec.run_id,
                "labels": ctx.settings.typing.labels,
                "models": models(actor),
            },
            needs=(spec.run_id,),
        )
        for spec in t1_hotpotqa.trained_runs(ctx, actor, "GRSE")
    ]


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs += t1_hotpotqa.layout(ctx)["GRSE"][actor.label]
        runs += typing_runs(ctx, actor)
    return unique_runs(runs)


def _share(label: str) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        if not outcome.skill_types:
            raise NotMeasured("the trained libraries hold no skill")
        return 100.0 * sum(t.label == label for t in outcome.skill_types) / len(outcome.skill_types)

    return read


def _words(label: str) -> Metric:
    def read(outcome: RunOutcome) -> float | None:
        if not outcome.skill_types:
            raise NotMeasured("no skill was typed")
        chosen = [t.words for t in outcome.skill_types if t.label == label]
        if not chosen:
            raise NotMeasured("no skill of this type")
        return sum(chosen) / len(chosen)

    return read


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    columns = []
    for actor in ctx.actors:
        columns += [
            Column(key=f"{actor.label}:share", label=f"% of skills [{actor.label}]"),
            Column(key=f"{actor.label}:words", label=f"words [{actor.label}]"),
        ]
    rows = []
    for label in [*ctx.settings.typing.labels, UNPARSED]:
        cells = {}
        for actor in ctx.actors:
            outcomes = results_of(typing_runs(ctx, actor), results)
            cells[f"{actor.label}:share"] = collect(
                outcomes, _share(label), paper=ctx.paper.value(label, "share")
            )
            cells[f"{actor.label}:words"] = collect(
                outcomes, _words(label), paper=ctx.paper.value(label, "words")
            )
        rows.append(Row(label=label, cells=cells))
    notes = [
        "words: mean body length of the skills of that type; a type without skills has no "
        "length (FAILED: no skill of this type), never 0",
    ]
    header = [f"types: {ctx.settings.typing.why}"]
    return [TableContent(columns=columns, rows=rows, notes=notes, header=header)]
