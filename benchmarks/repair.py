"""Does training repair a perturbed library? The paper's repair study (§5.3, Tables 4 and 5):
start every agent from a planted library that mixes helpful skills with plausible harmful ones,
train, and see which skills each method credits, removes and keeps, and what it does to the
test score.

    python benchmarks/repair.py [--task demo] [--model default|small|PATH] [--out DIR]
    python benchmarks/repair.py --task locomo --data ../shared/data/locomo/locomo10.json \\
        [--category single-hop] [--test-limit 30] [--iterations 2] [--out DIR]
    python benchmarks/repair.py ... --dry-run     # the configs and the runs, no engine

Three methods repair the same planted library (`--planted FILE`, default the task's bundled
one: the demo's `planted.json`, or on LoCoMo the paper's perturbed single-hop library,
`grse_graph/tasks/locomo_planted`; which skill helps and which harms is in that file only,
never shown to the critic or the optimizer), each with `repair_config` (the demo's loop
settings with `REPAIR_SETTINGS`: refine and prune every iteration, nothing induced):

- `grse`: GRSE with critic credit only (the paper's method);
- `grse+probe`: GRSE with probe credit beside the critic's (each skill's effect measured by
  execution, skills masked);
- `maskills`: MASkills, critic credit only.

`--task demo` trains and tests on the demo task (default: all 24 test questions). `--task
locomo` trains on the LoCoMo conversation split restricted to `--category` (default single-hop,
the paper's setting) and tests the first `--test-limit` (30) test questions. The planted
libraries are per agent (retriever, reasoner), which every task's default team has, so a library
planted for one task also starts a run of another (`--planted`): the config's task, data and
category are the benchmark's, and the output says the planted library was written for another
task (its kinds are what its skills do there). `grse reproduce table4_5` runs the paper's design
of the same study (Tables 4 and 5).

Printed per method: each planted skill with its kind, the critic's first credit u1 and whether
its sign is right, the probe's measured effect (grse+probe), which signal decided and its fate
(kept, refined, pruned, merged); the number of right signs, the helpful-harmful u1 separation;
the planted -> trained test transitions with the paired difference of mean reward and its
bootstrap interval; the times. Then one table of the planted skills over the methods (Table 4)
and one summary table (Table 5): right signs x/N, separation, harmful removed x/N, helpful kept
x/N, planted and trained scores, the difference [interval], minutes.

Each method's run folder is OUT/<method>; its finished result is OUT/<method>/repair.json (a
`RepairRun`, read by the evals/ table scripts): a method whose repair.json exists is printed,
not run again, an unfinished one is resumed. The planted libraries are tested once, in
OUT/test_start, and every method compares against that evaluation: the first method's test
time includes it, the others' do not. "minutes" is the wall time (engine start included) of the
session that finished the method; a resumed method's earlier sessions are not counted.

Expected cost: each method starts its own embedded engine, trains `--iterations` iterations
and tests the trained libraries (the planted ones once for all methods); measured: see the
closing note.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, computed_field
from rich.console import Console
from rich.table import Table

from grse_graph.errors import GrseError
from grse_graph.evaluation.transitions import LibraryComparison
from grse_graph.output import output_console
from grse_graph.tasks.planted import PlantedLibrary, demo_planted, load_planted, locomo_planted
from grse_graph.team import default_team
from grse_graph.training.config import TrainConfig
from grse_graph.training.demo import (
    DEMO_SETTINGS,
    REPAIR_SETTINGS,
    TEST_FOLDERS,
    DemoResult,
    print_comparison,
    print_planted,
    repair_config,
    run_demo_session,
)
from grse_graph.training.repair import PlantedSkillOutcome, separation
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.session import load_training_task

RESULT_FILE = "repair.json"
TASKS = ("demo", "locomo")
LOCOMO_TEST_LIMIT = 30
"""LoCoMo's default `--test-limit`: its single-hop test split holds 453 questions."""
LOCOMO_CATEGORY = "single-hop"
"""LoCoMo's default `--category`: the paper's repair setting."""
BUNDLED = {"demo": demo_planted, "locomo": locomo_planted}
"""Each task's default planted library: the demo's, and the paper's perturbed LoCoMo library."""


@dataclass(frozen=True)
class RepairMethod:
    """One compared method: the credit method it trains with and whether probe credit is on."""

    label: str
    method: str
    probe: bool
    about: str


METHODS: dict[str, RepairMethod] = {
    m.label: m
    for m in (
        RepairMethod("grse", "grse", False, "GRSE, critic credit only (the paper's method)"),
        RepairMethod("grse+probe", "grse", True, "GRSE with probe credit beside the critic's"),
        RepairMethod("maskills", "maskills", False, "MASkills, critic credit only"),
    )
}
"""The benchmark's methods by label (the label names the run folder OUT/<label>)."""


class RepairMeasures(BaseModel):
    """One method's row of the summary table (Table 5), derived from its outcomes, its test
    comparison and its time."""

    skills: int
    """Planted skills."""
    signs_correct: int
    """Planted skills whose first critic credit u1 has the sign of their kind."""
    signs_wrong: int
    """... whose u1 has the other sign (the rest are silent: no credit, or u1 = 0)."""
    separation: float | None
    """Mean u1 of the helpful skills minus that of the harmful ones (None: a kind uncredited)."""
    harmful: int
    harmful_removed: int
    """Harmful skills pruned or merged away."""
    harmful_rewritten: int
    """Harmful skills refined (rewritten) and kept."""
    helpful: int
    helpful_kept: int
    """Helpful skills kept, unchanged or refined."""
    repaired: int
    """Harmful removed or rewritten plus helpful kept (`PlantedSkillOutcome.repaired`)."""
    test_questions: int
    planted_reward: float
    """Mean test reward of the planted libraries."""
    trained_reward: float
    """Mean test reward of the trained libraries."""
    difference: float
    """Paired difference of mean reward, trained - planted."""
    difference_low: float
    difference_high: float
    level: float
    """The bootstrap interval's level (0.95)."""
    minutes: float
    """Wall time of the session that finished the method, engine start included."""


def repair_measures(
    outcomes: Sequence[PlantedSkillOutcome], comparison: LibraryComparison, wall_s: float
) -> RepairMeasures:
    """The summary row of one method."""
    harmful = [o for o in outcomes if o.kind == "harmful"]
    helpful = [o for o in outcomes if o.kind == "helpful"]
    paired = comparison.paired
    return RepairMeasures(
        skills=len(outcomes),
        signs_correct=sum(o.sign_correct is True for o in outcomes),
        signs_wrong=sum(o.sign_correct is False for o in outcomes),
        separation=separation(list(outcomes)),
        harmful=len(harmful),
        harmful_removed=sum(o.fate in ("pruned", "merged") for o in harmful),
        harmful_rewritten=sum(o.fate == "refined" for o in harmful),
        helpful=len(helpful),
        helpful_kept=sum(o.fate in ("kept", "refined") for o in helpful),
        repaired=sum(o.repaired for o in outcomes),
        test_questions=paired.questions,
        planted_reward=comparison.mean_before,
        trained_reward=comparison.mean_after,
        difference=paired.difference,
        difference_low=paired.low,
        difference_high=paired.high,
        level=paired.level,
        minutes=wall_s / 60.0,
    )


class RepairRun(BaseModel):
    """One method's finished repair of a planted library: OUT/<method>/repair.json.

    `result.planted` holds each planted skill's kind, first credit u1, probe effect, deciding
    signal and fate; `result.comparison` the planted -> trained test comparison with the
    paired difference and its interval; `measures` (derived, written for readers of the JSON,
    ignored when read back) the summary row."""

    method: str
    """The benchmark's label: grse, grse+probe or maskills (the run folder's name)."""
    credit_method: str
    """The training method (`config.method.name`)."""
    probe: bool
    """Whether probe credit was on (`config.probe` is set)."""
    planted_file: str
    """The planted-library JSON the run started from."""
    planted_task: str
    """The task the planted library was written for (may differ from `config.task`)."""
    model: str
    """The embedded model (`--model`)."""
    test_limit: int | None
    """The first N test questions tested (None: the whole test split)."""
    resumed: bool
    """Whether the finishing session resumed an earlier one (its times cover itself only)."""
    config: TrainConfig
    result: DemoResult
    wall_s: float
    """Wall time of the finishing session, engine start included."""
    usage: dict[str, Any]
    """Model calls and tokens per role over every session of the run folder."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def measures(self) -> RepairMeasures:
        """The summary row (Table 5)."""
        return repair_measures(self.result.planted, self.result.comparison, self.wall_s)


def method_config(
    planted: PlantedLibrary,
    spec: RepairMethod,
    *,
    task: str,
    data: str | None,
    category: str | None,
    iterations: int,
    batch_size: int,
    validation_size: int,
) -> TrainConfig:
    """`repair_config` for one method, with the benchmark's task, data and category over the
    planted library's task."""
    return repair_config(
        planted,
        spec.method,
        probe=spec.probe,
        task=task,
        data=data,
        category=category,
        iterations=iterations,
        batch_size=batch_size,
        validation_size=validation_size,
    )


def run_method(
    spec: RepairMethod,
    config: TrainConfig,
    planted: PlantedLibrary,
    model: str,
    test_limit: int | None,
    folder: Path,
    start_test: Path,
    console: Console,
) -> RepairRun:
    """Train and test one method in `folder` (resuming an unfinished run there); the planted
    libraries are tested in `start_test`, shared by the methods of one benchmark run."""
    run = RunFolder(folder)
    resume = run.exists()
    if resume and run.read_config() != config:
        raise SystemExit(
            f"{folder} holds a run with other settings; give another --out or delete the folder"
        )
    session = run_demo_session(
        config,
        run,
        model,
        test_limit=test_limit,
        console=console,
        start_test=start_test,
        resume=resume,
        planted=planted,
    )
    return RepairRun(
        method=spec.label,
        credit_method=config.method.name,
        probe=config.probe is not None,
        planted_file=str(planted.source),
        planted_task=planted.task,
        model=model,
        test_limit=test_limit,
        resumed=resume,
        config=config,
        result=session.result,
        wall_s=session.wall_s,
        usage=session.run_usage,
    )


def _u1_text(outcome: PlantedSkillOutcome | None) -> str:
    if outcome is None:
        return "-"
    if outcome.u1 is None:
        return f"silent, {outcome.fate}"
    sign = {True: " right", False: " wrong", None: ""}[outcome.sign_correct]
    return f"{outcome.u1:+.2f}{sign}, {outcome.fate}"


def skill_table(runs: Sequence[RepairRun]) -> Table:
    """Table 4 over the methods: one row per planted skill, per method its u1 (with whether
    the sign is right) and its fate."""
    table = Table(title="planted skills: critic u1 (sign) and fate per method")
    for column in ("agent", "skill", "kind"):
        table.add_column(column)
    for r in runs:
        table.add_column(r.method)
    by_method = [{(o.agent, o.skill): o for o in r.result.planted} for r in runs]
    keys: dict[tuple[str, str], str] = {}
    for r in runs:
        for o in r.result.planted:
            keys.setdefault((o.agent, o.skill), o.kind)
    for (agent, skill), kind in keys.items():
        cells = [_u1_text(outcomes.get((agent, skill))) for outcomes in by_method]
        table.add_row(agent, skill, kind, *cells)
    return table


def summary_table(
    rows: Sequence[tuple[str, RepairMeasures]], title: str, caption: str | None = None
) -> Table:
    """Table 5: one row per method with its sign, separation, removal and score measures."""
    table = Table(title=title, caption=caption)
    table.add_column("method")
    for column in (
        "right signs",
        "separation",
        "harmful removed",
        "helpful kept",
        "planted",
        "trained",
        "difference [95% CI]",
        "minutes",
    ):
        table.add_column(column, justify="right")
    for label, m in rows:
        removed = f"{m.harmful_removed}/{m.harmful}"
        if m.harmful_rewritten:
            removed += f" (+{m.harmful_rewritten} rewritten)"
        table.add_row(
            label,
            f"{m.signs_correct}/{m.skills}",
            "n/a" if m.separation is None else f"{m.separation:+.2f}",
            removed,
            f"{m.helpful_kept}/{m.helpful}",
            f"{m.planted_reward:.3f}",
            f"{m.trained_reward:.3f}",
            f"{m.difference:+.3f} [{m.difference_low:+.3f}, {m.difference_high:+.3f}]",
            f"{m.minutes:.1f}",
        )
    return table


def print_run(console: Console, run: RepairRun, folder: Path) -> None:
    """One method's planted skills, test comparison and times."""
    spec = METHODS.get(run.method)
    about = f": {spec.about}" if spec is not None else ""
    console.rule(f"{run.method}{about}; run folder {folder} (report: {folder / 'report.md'})")
    print_planted(console, run.result.planted, probe=run.probe)
    print_comparison(console, run.result.comparison)
    console.print(
        f"time: training {run.result.training_s:.0f} s, test {run.result.test_s:.0f} s, "
        f"wall incl. engine start {run.wall_s:.0f} s"
        + (" (a resumed run: the finishing session only)" if run.resumed else ""),
        highlight=False,
    )


@dataclass(frozen=True)
class Plan:
    """What one benchmark invocation runs: the planted library, the task and the methods'
    configurations."""

    planted: PlantedLibrary
    task: str
    data: str | None
    category: str | None
    test_limit: int | None
    tested: int
    splits: dict[str, int]
    configs: dict[str, TrainConfig]

    @property
    def note(self) -> str | None:
        """What to say when the planted library was written for another task."""
        if self.planted.task == self.task:
            return None
        where = self.task + (f" ({self.category})" if self.category else "")
        return (
            f"note: the planted library was written for the {self.planted.task} task "
            f"({self.planted.source}); here it starts {where} training: its kinds (helpful, "
            f"harmful) are what its skills do on the {self.planted.task} task"
        )


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0].replace("\n", " ")
    )
    parser.add_argument("--task", choices=TASKS, default="demo", help="task (default demo)")
    parser.add_argument(
        "--data", default=None, help="the task's data (locomo: locomo10.json or its folder)"
    )
    parser.add_argument(
        "--category",
        default=None,
        help=f"LoCoMo question category (default {LOCOMO_CATEGORY}, the paper's setting)",
    )
    parser.add_argument(
        "--planted",
        type=Path,
        default=None,
        help="planted-library JSON (default: the demo's bundled planted.json)",
    )
    parser.add_argument(
        "--methods", default=",".join(METHODS), help=f"comma list of {','.join(METHODS)}"
    )
    parser.add_argument("--model", default="default", help="embedded model: small|default|PATH")
    parser.add_argument(
        "--iterations",
        type=int,
        default=DEMO_SETTINGS["iterations"],
        help=f"training iterations (default {DEMO_SETTINGS['iterations']})",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=DEMO_SETTINGS["batch_size"],
        help=f"training questions per iteration (default {DEMO_SETTINGS['batch_size']})",
    )
    parser.add_argument(
        "--validation-size",
        type=int,
        default=REPAIR_SETTINGS["validation_size"],
        help=f"the gate's validation questions (default {REPAIR_SETTINGS['validation_size']})",
    )
    parser.add_argument(
        "--test-limit",
        type=int,
        default=None,
        help=f"first N test questions, 0: all (default: demo all 24, locomo {LOCOMO_TEST_LIMIT})",
    )
    parser.add_argument(
        "--out", type=Path, default=None, help="benchmark folder (default: a new temporary one)"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print the configs and the runs; start no engine"
    )
    return parser.parse_args(argv)


def make_plan(args: argparse.Namespace) -> tuple[list[RepairMethod], Plan]:
    """Check the command line, the planted library and the task (no engine), and build every
    chosen method's configuration. `GrseError` or `SystemExit` with one line otherwise."""
    labels = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [label for label in labels if label not in METHODS]
    if unknown or not labels:
        raise SystemExit(
            f"error: unknown method {unknown[0]!r} (of {', '.join(METHODS)})"
            if unknown
            else "error: --methods names no method"
        )
    if args.task == "locomo" and args.data is None:
        raise SystemExit("error: --task locomo needs --data PATH (locomo10.json or its folder)")
    if args.task != "locomo" and args.category is not None:
        raise SystemExit(f"error: --category is for --task locomo (task {args.task!r})")
    if args.data is not None and not Path(args.data).exists():
        raise SystemExit(f"error: --data {args.data}: no such file or folder")
    if args.test_limit is not None and args.test_limit < 0:
        raise SystemExit("error: --test-limit must be 0 (all) or more")
    planted = load_planted(args.planted) if args.planted is not None else BUNDLED[args.task]()
    category = (args.category or LOCOMO_CATEGORY) if args.task == "locomo" else None
    data = str(Path(args.data).resolve()) if args.data is not None else None
    specs = [METHODS[label] for label in dict.fromkeys(labels)]
    configs = {
        spec.label: method_config(
            planted,
            spec,
            task=args.task,
            data=data,
            category=category,
            iterations=args.iterations,
            batch_size=args.batch_size,
            validation_size=args.validation_size,
        )
        for spec in specs
    }
    first = next(iter(configs.values()))
    task = load_training_task(first)
    team = default_team(task)
    strangers = sorted(set(planted.library_folders()) - set(team.agent_names))
    if strangers:
        raise SystemExit(
            f"error: {planted.source}: agent {strangers[0]!r} is not in the {args.task} team "
            f"(agents: {', '.join(team.agent_names)})"
        )
    splits = {name: len(task.split(name)) for name in ("train", "validation", "test")}
    limit = args.test_limit
    if limit is None:
        limit = LOCOMO_TEST_LIMIT if args.task == "locomo" else 0
    test_limit = limit or None
    tested = min(test_limit or splits["test"], splits["test"])
    plan = Plan(planted, args.task, data, category, test_limit, tested, splits, configs)
    return specs, plan


def run_state(folder: Path, config: TrainConfig) -> str:
    """What the benchmark would do with a method's run folder."""
    done = folder / RESULT_FILE
    if done.exists():
        try:
            same = RepairRun.model_validate_json(done.read_text(encoding="utf-8")).config == config
        except ValueError as error:
            return f"unreadable {done}: {str(error).splitlines()[0]}"
        return f"finished: would print {done}" + (
            "" if same else " (made with other settings: printed as it is)"
        )
    run = RunFolder(folder)
    if not run.exists():
        return "new: would train and test"
    try:
        same = run.read_config() == config
    except GrseError as error:
        return f"unreadable: {error}"
    return "unfinished: would resume" if same else "holds other settings: would stop"


def print_dry_run(
    console: Console, specs: Sequence[RepairMethod], plan: Plan, out: Path | None, model: str
) -> None:
    """The planted library, the task, the runs that would be made and their configurations."""

    def say(text: str = "") -> None:
        console.print(text, highlight=False, markup=False, soft_wrap=True)

    planted = plan.planted
    say(f"dry run: no engine is started (model {model} per method)")
    say(f"planted library: {planted.source} (written for the {planted.task} task)")
    for entry in planted.skills:
        say(f"  {entry.agent}/{entry.skill}: {entry.kind}")
    if plan.note:
        say(plan.note)
    splits = ", ".join(f"{name} {count}" for name, count in plan.splits.items())
    where = plan.task + (f", category {plan.category}" if plan.category else "")
    say(f"task {where}: {splits} questions; tested: the first {plan.tested} test questions")
    root = out if out is not None else Path("OUT")
    if out is None:
        say("OUT: a new temporary folder (give --out DIR to keep the runs and resume them)")
    start = root / TEST_FOLDERS["start"]
    start_state = "exists: finished questions are reused" if start.exists() else "new"
    say(f"planted libraries tested once, shared by the methods: {start} ({start_state})")
    say(f"runs ({len(specs)}):")
    for spec in specs:
        config = plan.configs[spec.label]
        folder = root / spec.label
        probe = (
            f"probe on ({config.probe.design}, {config.probe.questions} questions, budget "
            f"{config.probe.budget}, {config.probe.confidence:.0%} intervals)"
            if config.probe is not None
            else "probe off"
        )
        state = run_state(folder, config) if out is not None else "new: would train and test"
        say(
            f"  {spec.label}: method {config.method.name}, {probe}, task {config.task}, "
            f"{config.iterations} iteration(s); {folder}: {state}"
        )
    base_label, base = next(iter(plan.configs.items()))
    say(f"config of {base_label} (its run folder's config.json):")
    say(json.dumps(base.model_dump(mode="json"), indent=2))
    reference = base.model_dump(mode="json")
    for label, config in list(plan.configs.items())[1:]:
        dumped = config.model_dump(mode="json")
        changed = {k: v for k, v in dumped.items() if v != reference.get(k)}
        say(f"config of {label}: as {base_label}'s but")
        for key, value in changed.items():
            say(f"  {key}: {json.dumps(value)}")


def main(argv: Sequence[str] | None = None) -> None:
    """Repair the planted library with every chosen method and print the comparison."""
    args = parse_args(argv)
    try:
        specs, plan = make_plan(args)
    except GrseError as error:
        raise SystemExit(f"error: {error}") from None
    console = output_console()
    if args.dry_run:
        print_dry_run(console, specs, plan, args.out, args.model)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-repair-bench-"))
    if plan.note:
        console.print(plan.note, highlight=False, markup=False)
    runs: list[RepairRun] = []
    for spec in specs:
        folder = out / spec.label
        done = folder / RESULT_FILE
        if done.exists():
            console.print(f"{spec.label}: finished earlier, reusing {done}", highlight=False)
            finished = RepairRun.model_validate_json(done.read_text(encoding="utf-8"))
            if finished.config != plan.configs[spec.label]:
                console.print(
                    f"{spec.label}: warning: {done} was made with other settings than these "
                    "(printed as it is; give another --out to run these)",
                    highlight=False,
                    markup=False,
                )
        else:
            try:
                # The methods start from the same planted libraries with the same loop
                # settings, so their starting team is the same: tested once and shared.
                finished = run_method(
                    spec,
                    plan.configs[spec.label],
                    plan.planted,
                    args.model,
                    plan.test_limit,
                    folder,
                    out / TEST_FOLDERS["start"],
                    console,
                )
            except Exception as error:  # one method failing must not hide the others
                console.print(
                    f"{spec.label}: failed: {type(error).__name__}: {error}", markup=False
                )
                continue
            tmp = done.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text(finished.model_dump_json(indent=2) + "\n", encoding="utf-8")
            tmp.replace(done)
        print_run(console, finished, folder)
        runs.append(finished)
    if not runs:
        raise SystemExit("every method failed")
    console.print(skill_table(runs))
    where = plan.task + (f" {plan.category}" if plan.category else "")
    console.print(
        summary_table(
            [(r.method, r.measures) for r in runs],
            f"repair of {plan.planted.source.name} on {where}: {args.iterations} iteration(s) x "
            f"{args.batch_size} question(s), |V| = {args.validation_size}, {plan.tested} test "
            f"question(s), model {args.model}",
            caption=plan.note,
        )
    )
    console.print(f"benchmark folder: {out}", highlight=False)


if __name__ == "__main__":
    main()
