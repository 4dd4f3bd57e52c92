"""What a table definition is, and the helpers every table uses to read outcomes."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from grse_graph.reproduce.context import TableContext
from grse_graph.reproduce.manifest import RunSpec
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.table import Metric, NotMeasured, ResultTable

Result = RunOutcome | RunFailure
Layout = dict[str, dict[str, list[RunSpec]]]
"""Row label -> column group (an actor, a category) -> the runs of that cell (one per seed)."""


@dataclass(frozen=True)
class TableDef:
    """A paper table: its name (`table1`), script, title, what it reproduces and costs (the
    scripts' --help), the tasks whose data it reads, its runs and its builder (one result
    table, or two for T4 + T5)."""

    name: str
    script: str
    title: str
    reproduces: str
    cost: str
    tasks: tuple[str, ...]
    papers: tuple[str, ...]
    """The `evals/paper/<name>.json` files it prints beside its numbers."""
    plan: Callable[[TableContext], list[RunSpec]]
    build: Callable[[TableContext, Mapping[str, Result]], list[ResultTable]]


def flatten(layout: Layout) -> list[RunSpec]:
    """Every run of a layout, duplicates kept once, dependencies first."""
    seen: dict[str, RunSpec] = {}
    for groups in layout.values():
        for specs in groups.values():
            for spec in specs:
                seen.setdefault(spec.run_id, spec)
    return list(seen.values())


def results_of(specs: Sequence[RunSpec], results: Mapping[str, Result]) -> list[Result]:
    """The results of `specs`; a run without one (never made) is a failure saying so."""
    return [results.get(s.run_id) or RunFailure(run_id=s.run_id, error="not run") for s in specs]


def summary_metric(name: str, category: str | None = None, scale: float = 100.0) -> Metric:
    """A test metric of the run's (trained) evaluation, overall or of one category, in
    points; `NotMeasured` (with the reason) when the run has no evaluation, no question of
    that category, or every question of it failed."""

    def read(outcome: RunOutcome) -> float | None:
        summary = outcome.summary
        if summary is None:
            raise NotMeasured("no test evaluation")
        group = summary.overall if category is None else summary.per_category.get(category)
        if group is None:
            raise NotMeasured(f"no {category} question among its test questions")
        if group.count == group.failed:
            raise NotMeasured(f"all {group.count} test question(s) failed")
        value = group.metrics.get(name)
        if value is None:
            raise NotMeasured(f"its task reports no {name}")
        return value * scale

    return read
