"""Tables 4 and 5: repair of a planted (perturbed) library, in one of the designs of
`t45_designs` (`--design`, default the paper's: LoCoMo single-hop).

Table 4: token F1, BLEU, ΔF1 (from the perturbed starting library) and the abstention rate of
the perturbed library, its helpful skills alone, and the final library of each method (GRSE,
MASkills; with `--additions` also GRSE with the project's probe credit, its own row). Table 5:
per planted skill its kind, and per method the critic's aggregated utility after the first
update (u1) and the skill's fate, with the right signs and the helpful-harmful separation.
The utility of each planted skill over the iterations is drawn as a figure.

The header says whether the run's size can test repair at all: when the interval of the paired
difference between the helpful skills alone and the perturbed library includes 0, no method
can be seen to recover what the perturbation took.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import grse_graph
from grse_graph.errors import GrseError
from grse_graph.evaluation.records import EvalSummary, PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.evaluation.transitions import compare_predictions
from grse_graph.reproduce import figures
from grse_graph.reproduce.context import Actor, TableContext
from grse_graph.reproduce.manifest import RunSpec, unique_runs
from grse_graph.reproduce.outcome import RunFailure, RunOutcome
from grse_graph.reproduce.paper import PaperValue
from grse_graph.reproduce.specs import planted_spec, train_spec
from grse_graph.reproduce.table import Cell, Column, Metric, NotMeasured, Row, TableContent, collect
from grse_graph.tasks.planted import PlantedKind, PlantedLibrary, PlantedSkill, load_planted
from grse_graph.team.spec import FIRST_AGENT, SECOND_AGENT
from grse_graph.training.repair import PlantedSkillOutcome, separation

from .base import Result, actor_lines, layout_column, paper_actor, results_of, summary_metric
from .t45_designs import MethodRun, design_of

PLANTED_ROW = "Perturbed library"
HELPFUL_ROW = "Helpful skills alone"
PROBE_ROW = "GRSE + probe (project addition)"
METHODS: dict[str, tuple[str, bool]] = {
    "MASkills": ("maskills", False),
    "GRSE": ("grse", False),
    PROBE_ROW: ("grse", True),
}
"""Row label -> (credit method, probe credit on). The probe row is the project's addition:
planned only with `--additions`, never mixed into GRSE's row."""
HELPFUL: tuple[PlantedKind, ...] = ("helpful",)
KIND_LABELS: dict[str, str] = {"helpful": "help", "harmful": "harm", "irrelevant": "irr."}
"""Table 5's kind column as the paper prints it."""
PAPER_ACTOR = "Qwen3.8"
"""The paper's actor of Tables 4 and 5 (grse.txt:236, 238)."""
PAPER_FATE_ITERATION = 5
"""Table 5's fate is the skill's status by iteration 5 (grse.txt:255)."""
SIGN_ROW = "Correct sign"
SEPARATION_ROW = "ū1(help) − ū1(harm)"
PAPER_SUMMARY_ROWS = {SIGN_ROW: "correct_signs", SEPARATION_ROW: "separation"}
"""Our summary row -> its key in the paper's Table 5 (`paper/table5.json`)."""
AGENT_NUMBERS = {FIRST_AGENT: "Agent 1", SECOND_AGENT: "Agent 2"}
"""The paper's names of the team's agents (App. F: Agent 1 retrieves, Agent 2 answers)."""


def planted_library(ctx: TableContext) -> PlantedLibrary:
    """The design's planted library, or `--planted FILE` (for the design's task)."""
    design = design_of(ctx)
    if ctx.planted is None:
        return design.planted()
    planted = load_planted(ctx.planted)
    if planted.task != design.task:
        raise GrseError(
            f"--planted {ctx.planted}: a library for task {planted.task!r}, but design "
            f"{design.name!r} runs {design.task!r} (--design)"
        )
    return planted


def method_labels(ctx: TableContext) -> list[str]:
    """The methods' rows this run plans: the probe row only with the project's additions."""
    return [label for label in METHODS if label != PROBE_ROW or not ctx.paper_mode]


def planted_eval(
    ctx: TableContext, actor: Actor, kinds: tuple[PlantedKind, ...] | None = None
) -> RunSpec:
    """The perturbed library (only its skills of `kinds` when given) on the test split (the
    starting point of every method)."""
    design = design_of(ctx)
    source = str(planted_library(ctx).source)
    return planted_spec(ctx, actor, design.task, source, design.category, kinds=kinds)


def helpful_eval(ctx: TableContext, actor: Actor) -> RunSpec:
    """The perturbed library's helpful skills alone on the test split (Table 4's reference)."""
    return planted_eval(ctx, actor, HELPFUL)


def method_runs(ctx: TableContext, actor: Actor, label: str) -> list[RunSpec]:
    """One method's training runs from the planted library (one per seed)."""
    design = design_of(ctx)
    planted = planted_library(ctx)
    method, probe = METHODS[label]
    start = planted_eval(ctx, actor)
    variant = "probe" if probe else "default"  # a repair variant, not one of GRSE's (Table 10)
    return [
        train_spec(
            ctx,
            actor,
            design.task,
            design.category,
            method,
            variant,
            seed,
            start=start,
            planted=str(planted.source),
            config=design.train_config(ctx, actor, planted, MethodRun(method, probe, seed)),
        )
        for seed in ctx.seeds
    ]


def plan(ctx: TableContext) -> list[RunSpec]:
    runs: list[RunSpec] = []
    for actor in ctx.actors:
        runs += [planted_eval(ctx, actor), helpful_eval(ctx, actor)]
        runs += [s for label in method_labels(ctx) for s in method_runs(ctx, actor, label)]
    return unique_runs(runs)


# ----- Table 4 ---------------------------------------------------------------------------


def _abstention(outcome: RunOutcome) -> float | None:
    """Share (%) of declined answers ("not mentioned" and the like) of the run's test."""
    summary = outcome.summary
    if summary is None:
        raise NotMeasured("no test evaluation")
    group = summary.overall
    if group.count == group.failed:
        raise NotMeasured(f"all {group.count} test question(s) failed")
    return group.states.get("declined", 0.0) * 100


def _f1(summary: EvalSummary | None, what: str) -> float:
    """The overall F1 of a test evaluation, in points (`NotMeasured` saying why not)."""
    if summary is None:
        raise NotMeasured(f"no test of the {what}")
    group = summary.overall
    if group.count == group.failed:
        raise NotMeasured(f"all {group.count} test question(s) of the {what} failed")
    value = group.metrics.get("f1")
    if value is None:
        raise NotMeasured(f"the {what}'s test reports no f1")
    return value * 100


def _delta_f1(outcome: RunOutcome) -> float:
    """Final minus starting (perturbed) library F1 of a training run, in points."""
    return _f1(outcome.summary, "final library") - _f1(outcome.start_summary, "starting library")


def _minus_planted(planted: Result) -> Metric:
    """F1 minus the perturbed library's (its own evaluation run), in points."""

    def read(outcome: RunOutcome) -> float:
        if isinstance(planted, RunFailure):
            raise NotMeasured(f"the perturbed library's test failed: {planted.error}")
        return _f1(outcome.summary, "helpful skills alone") - _f1(
            planted.summary, "perturbed library"
        )

    return read


SCORES: dict[str, Metric] = {
    "f1": summary_metric("f1"),
    "bleu": summary_metric("bleu"),
    "abstention": _abstention,
}


PaperLookup = Callable[[str, str], PaperValue]
"""The paper's value of (row, column) in one of its tables."""


def _no_paper(row: str, column: str) -> PaperValue:
    return None


def _beside(ctx: TableContext, actor: Actor) -> bool:
    """Whether `actor`'s numbers stand beside the paper's (its Qwen3.8 actor's)."""
    return design_of(ctx).paper_numbers and paper_actor(ctx, actor) == PAPER_ACTOR


def _paper(ctx: TableContext, name: str, actor: Actor) -> PaperLookup:
    """The paper's numbers of `name` beside `actor`'s, or none (another actor, or a design
    that is not the paper's)."""
    return ctx.paper_of(name).value if _beside(ctx, actor) else _no_paper


def _score_cells(paper: PaperLookup, row: str, outcomes: Sequence[Result]) -> dict[str, Cell]:
    return {key: collect(outcomes, metric, paper=paper(row, key)) for key, metric in SCORES.items()}


def _table4_rows(ctx: TableContext, results: Mapping[str, Result], actor: Actor) -> list[Row]:
    paper = _paper(ctx, "table4", actor)
    suffix = f" [{actor.label}]"
    beside = paper_actor(ctx, actor) == PAPER_ACTOR
    planted = results_of([planted_eval(ctx, actor)], results)
    helpful = results_of([helpful_eval(ctx, actor)], results)
    start = _score_cells(paper, PLANTED_ROW, planted)
    start["delta_f1"] = Cell(text="(start)", paper=paper(PLANTED_ROW, "delta_f1"))
    alone = _score_cells(paper, HELPFUL_ROW, helpful)
    alone["delta_f1"] = collect(
        helpful, _minus_planted(planted[0]), paper=paper(HELPFUL_ROW, "delta_f1")
    )
    # The paper's row key on the rows of the actor beside its Qwen3.8 (the probe row is ours).
    rows = [Row(label=PLANTED_ROW + suffix, cells=start, key=PLANTED_ROW if beside else None)]
    rows.append(Row(label=HELPFUL_ROW + suffix, cells=alone, key=HELPFUL_ROW if beside else None))
    for label in method_labels(ctx):
        outcomes = results_of(method_runs(ctx, actor, label), results)
        cells = _score_cells(paper, label, outcomes)
        cells["delta_f1"] = collect(outcomes, _delta_f1, paper=paper(label, "delta_f1"))
        key = label if beside and label != PROBE_ROW else None
        rows.append(Row(label=label + suffix, cells=cells, key=key))
    return rows


def _records(result: Result) -> list[PredictionRecord]:
    if isinstance(result, RunFailure):
        raise GrseError(f"run {result.run_id} failed: {result.error}")
    if result.summary is None:
        raise GrseError(f"run {result.run_id} has no test evaluation")
    return list(EvalFolder(Path(result.summary.out_dir)).read_predictions().values())


def repair_size_line(planted: Result, helpful: Result, actor: str) -> str:
    """Whether this size can test repair: the paired difference (reward, per test question)
    between the helpful skills alone and the perturbed library, with its interval; an interval
    that includes 0 means no method can be seen to recover what the perturbation took."""
    try:
        comparison = compare_predictions(
            _records(planted),
            _records(helpful),
            before_label="perturbed library",
            after_label="helpful skills alone",
        )
    except GrseError as error:
        return f"actor {actor}: cannot tell whether this size can test repair ({error})"
    paired = comparison.paired
    measured = (
        f"helpful skills alone - perturbed library = {paired.difference:+.3f} reward, "
        f"{paired.level:.0%} interval [{paired.low:+.3f}, {paired.high:+.3f}] over "
        f"{paired.questions} test question(s)"
    )
    if paired.low <= 0.0 <= paired.high:
        return (
            f"actor {actor}: THIS SIZE CANNOT TEST REPAIR: {measured} includes 0, so no "
            "method can be seen to recover what the perturbation took"
        )
    return f"actor {actor}: this size can test repair: {measured} excludes 0"


def _shown_path(path: Path) -> str:
    """A bundled file as its place in the package (a committed table names no machine's
    install path); any other file as given."""
    package = Path(grse_graph.__file__).parent
    return f"grse_graph/{path.relative_to(package)}" if path.is_relative_to(package) else str(path)


def _header(ctx: TableContext, results: Mapping[str, Result]) -> list[str]:
    """The design's lines, the planted library's, the probe row's and the size test."""
    design = design_of(ctx)
    planted = planted_library(ctx)
    lines = [design.about, *design.declared]
    lines.append(
        f"planted library: {_shown_path(planted.source)} ({planted.composition()})"
        + (f"; {planted.about}" if ctx.planted is not None and planted.about else "")
    )
    if design.paper_numbers:
        lines += actor_lines(ctx, (PAPER_ACTOR,))
    if ctx.paper_mode:
        lines.append(
            f"row {PROBE_ROW!r}: not run in the paper's mode (probe credit is the project's "
            "addition; --additions runs it as its own row)"
        )
    for actor in ctx.actors:
        planted_result = results_of([planted_eval(ctx, actor)], results)[0]
        helpful_result = results_of([helpful_eval(ctx, actor)], results)[0]
        lines.append(repair_size_line(planted_result, helpful_result, actor.label))
    return lines


def _table4(ctx: TableContext, results: Mapping[str, Result], header: list[str]) -> TableContent:
    columns = [
        Column(key="f1", label="F1"),
        Column(key="bleu", label="BLEU"),
        Column(key="delta_f1", label="ΔF1"),
        Column(key="abstention", label="Abst. %"),
    ]
    rows = [row for actor in ctx.actors for row in _table4_rows(ctx, results, actor)]
    notes = [
        "F1, BLEU: token F1 and smoothed BLEU x 100 of the final library on the test split "
        "(greedy); ΔF1: the change in F1 from the perturbed starting library; Abst.: the "
        "share of declined answers ('not mentioned' and the like)",
        "a method's row: mean ± SD over its runs; the perturbed and helpful-alone rows are "
        "one greedy evaluation each",
    ]
    return TableContent(columns=columns, rows=rows, notes=notes, header=header)


# ----- Table 5 ---------------------------------------------------------------------------


def _skill_outcomes(outcomes: list[Result], agent: str, skill: str) -> list[PlantedSkillOutcome]:
    found = []
    for result in outcomes:
        if isinstance(result, RunOutcome):
            found += [o for o in result.planted if o.agent == agent and o.skill == skill]
    return found


def _skill_cells(
    outcomes: list[Result],
    agent: str,
    skill: str,
    paper: tuple[PaperValue, PaperValue] = (None, None),
) -> dict[str, Cell]:
    """A planted skill's u1 (over the runs that credited it) and fate per run; `paper` the
    paper's u1 and fate."""
    failures = [f"run {r.run_id}: {r.error}" for r in outcomes if isinstance(r, RunFailure)]
    mine = _skill_outcomes(outcomes, agent, skill)
    if not mine:
        reason = failures or ["no run recorded this planted skill"]
        return {
            "u1": Cell(failures=reason, digits=2, paper=paper[0]),
            "fate": Cell(failures=reason, paper=paper[1]),
        }
    u1 = [o.u1 for o in mine if o.u1 is not None]
    u1_cell = Cell(values=u1, failures=failures, digits=2, paper=paper[0])
    if not u1:
        u1_cell = Cell(
            text="silent (no credit)" + (f"; {len(failures)} failed" if failures else ""),
            digits=2,
            paper=paper[0],
        )
    fates = ", ".join(o.fate_text() for o in mine)
    # A run without a credit for the skill has no sign to be right or wrong.
    credited = [o.sign_correct for o in mine if o.sign_correct is not None]
    signs = f"sign right {sum(credited)}/{len(credited)}" if credited else "no sign"
    return {"u1": u1_cell, "fate": Cell(text=f"{fates}; {signs}", paper=paper[1])}


def _summary_cells(
    outcomes: list[Result], paper: PaperLookup, method: str
) -> dict[str, dict[str, Cell]]:
    """The right signs and the separation of one method's runs: row -> part -> cell."""
    failures = [f"run {r.run_id}: {r.error}" for r in outcomes if isinstance(r, RunFailure)]
    finished = [r for r in outcomes if isinstance(r, RunOutcome)]
    expected = {row: paper(key, f"{method}:u1") for row, key in PAPER_SUMMARY_ROWS.items()}
    runs = f"{len(finished)} run(s)" + (f", {len(failures)} failed" if failures else "")
    if not finished:
        failed = failures or ["not run"]
        return {
            row: {"u1": Cell(failures=failed, paper=expected[row]), "fate": Cell(text=runs)}
            for row in PAPER_SUMMARY_ROWS
        }
    rights = [sum(o.sign_correct is True for o in r.planted) for r in finished]
    seps = [s for s in (separation(list(r.planted)) for r in finished) if s is not None]
    sep_cell = Cell(values=seps, digits=2, paper=expected[SEPARATION_ROW])
    if not seps:
        sep_cell = Cell(
            text="n/a (a kind has no credited skill)", digits=2, paper=expected[SEPARATION_ROW]
        )
    return {
        SIGN_ROW: {
            "u1": Cell(text="/".join(map(str, rights)), digits=0, paper=expected[SIGN_ROW]),
            "fate": Cell(text=runs),
        },
        SEPARATION_ROW: {"u1": sep_cell, "fate": Cell(text="-")},
    }


def paper_skill_row(entry: PlantedSkill) -> str:
    """The planted skill's row in the paper's Table 5 (`Agent 1|context expansion`)."""
    return f"{AGENT_NUMBERS.get(entry.agent, entry.agent)}|{entry.label}"


def _method_columns(ctx: TableContext) -> dict[str, tuple[str, Actor]]:
    """Column group key -> (method row label, actor), in the table's order: the method's label
    for the actor beside the paper's (the paper's column keys), `label [actor]` otherwise."""
    groups = {}
    for actor in ctx.actors:
        # Table 5 puts GRSE's columns before MASkills' (grse.txt:242).
        for label in sorted(method_labels(ctx), key=lambda label: label != "GRSE"):
            beside = paper_actor(ctx, actor) == PAPER_ACTOR and label != PROBE_ROW
            groups[label if beside else f"{label} [{actor.label}]"] = (label, actor)
    return groups


def _skill_row(
    ctx: TableContext,
    entry: PlantedSkill,
    groups: Mapping[str, tuple[str, Actor]],
    by_group: Mapping[str, list[Result]],
) -> Row:
    row = paper_skill_row(entry)
    first = _paper(ctx, "table5", ctx.actors[0])
    cells = {
        "skill": Cell(text=entry.skill),
        "kind": Cell(text=KIND_LABELS[entry.kind], paper=first(row, "kind")),
    }
    for key, (label, actor) in groups.items():
        paper = _paper(ctx, "table5", actor)
        expected = (paper(row, f"{label}:u1"), paper(row, f"{label}:fate"))
        for part, cell in _skill_cells(by_group[key], entry.agent, entry.skill, expected).items():
            cells[f"{key}:{part}"] = cell
    agent = AGENT_NUMBERS.get(entry.agent)
    who = f"{agent} ({entry.agent})" if agent else entry.agent
    return Row(label=f"{who}: {entry.label}", cells=cells, key=row)


def _table5(ctx: TableContext, results: Mapping[str, Result], header: list[str]) -> TableContent:
    planted = planted_library(ctx)
    groups = _method_columns(ctx)
    by_group = {
        key: results_of(method_runs(ctx, actor, label), results)
        for key, (label, actor) in groups.items()
    }
    layout = ctx.paper_of("table5")
    columns = [Column(key="skill", label="skill", paper=False)]
    columns.append(layout_column(layout, "kind", "Kind"))
    for key, (label, actor) in groups.items():
        shown = f"{label} [{actor.label}]" if len(ctx.actors) > 1 else label
        columns += [
            layout_column(layout, f"{key}:u1", f"{shown} u1"),
            layout_column(layout, f"{key}:fate", f"{shown} Fate"),
        ]
    rows = [_skill_row(ctx, entry, groups, by_group) for entry in planted.skills]
    summary: dict[str, dict[str, Cell]] = {}
    for key, (label, actor) in groups.items():
        paper = _paper(ctx, "table5", actor)
        for row, parts in _summary_cells(by_group[key], paper, label).items():
            cells = summary.setdefault(row, {"skill": Cell(text="-"), "kind": Cell(text="-")})
            for part, cell in parts.items():
                cells[f"{key}:{part}"] = cell
    signed = sum(entry.kind != "irrelevant" for entry in planted.skills)
    labels = {SIGN_ROW: f"{SIGN_ROW} (of {signed})", SEPARATION_ROW: SEPARATION_ROW}
    rows += [
        Row(label=labels[row], cells=cells, key=PAPER_SUMMARY_ROWS[row])
        for row, cells in summary.items()
    ]
    notes = [
        "u1: the critic's aggregated utility of the skill after the first update, mean ± SD "
        "over the runs that credited it; its sign is right when positive for a helpful and "
        "negative for a harmful skill (an irrelevant skill has no right sign)",
        "Fate: the skill's status after the last iteration (kept, refined, pruned, merged), "
        "@ the iteration whose gate accepted the change; one entry per run",
    ]
    figure = _figure(ctx, groups, by_group)
    drawn = [str(figure)] if figure is not None else []
    return TableContent(
        columns=columns, rows=rows, notes=notes, figures=drawn, header=header + _fate_line(ctx)
    )


def _fate_line(ctx: TableContext) -> list[str]:
    """The header line when the runs stop before the paper's fate iteration."""
    actor = ctx.actors[0]
    train = method_runs(ctx, actor, "GRSE")[0]
    iterations = int(train.params["config"]["iterations"])
    if iterations == PAPER_FATE_ITERATION:
        return []
    return [
        f"Fate: by iteration {iterations}, the last one run here (paper: by iteration "
        f"{PAPER_FATE_ITERATION}, grse.txt:255)"
    ]


def _figure(
    ctx: TableContext,
    groups: Mapping[str, tuple[str, Actor]],
    by_group: Mapping[str, list[Result]],
) -> Path | None:
    series: dict[str, list[tuple[int, float | None]]] = {}
    planted = planted_library(ctx)
    for key, outcomes in by_group.items():
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
                series[f"{groups[key][0]}: {entry.label} ({entry.kind})"] = points
    if not series:
        return None
    return figures.utility_trajectories(
        series,
        ctx.root / "table5-utilities.png",
        "Planted skills' utility over iterations (first run; cf. the paper's Figure 6)",
    )


def tabulate(ctx: TableContext, results: Mapping[str, Result]) -> list[TableContent]:
    header = _header(ctx, results)
    return [_table4(ctx, results, header), _table5(ctx, results, header)]
