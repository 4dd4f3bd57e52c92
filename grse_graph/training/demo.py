"""`grse demo`: train GRSE on the demo task, then test the starting and the trained libraries,
and show what happened: by default the repair of the demo's planted library (each planted
skill's kind, the critic's first credit, the probe's measured effect and its fate), else
(`--from-empty`) each learned skill with its provenance and the gate's numbers; then the
per-question test transitions with the paired difference and its bootstrap interval.

`run_demo` is the learning check of any method on any task (`benchmarks/learning.py` runs it
for HotpotQA and MASkills too, `benchmarks/repair.py` on planted libraries); `learning_config`
and `repair_config` build its training configurations.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from grse_graph.evaluation import run_evaluation
from grse_graph.evaluation.answerer import TeamAnswerer
from grse_graph.evaluation.records import EvalSummary
from grse_graph.evaluation.store import EvalFolder
from grse_graph.evaluation.summary import difference_text, question_table, transition_table
from grse_graph.evaluation.transitions import LibraryComparison, compare_folders
from grse_graph.llm import SamplingSettings, load_config
from grse_graph.llm.config import DEFAULT_TRAINING_TOP_K
from grse_graph.methods.registry import method_class
from grse_graph.tasks.planted import PlantedLibrary
from grse_graph.team.rollout import Rollout

from .config import TrainConfig, protocol_train_config
from .graph import TrainingDeps
from .planted_table import PLANTED_TITLE, planted_columns, planted_row, repair_summary
from .provenance import LearnedSkill, learned_skills
from .repair import PlantedSkillOutcome, planted_outcomes
from .report import change_text, gate_text, question_lines, write_report
from .run_folder import TEST_FOLDERS, RunFolder
from .runner import TrainResult, run_training
from .session import open_endpoints, session_deps, write_run_usage

# One iteration on a few questions: sized to finish well inside 15 minutes on 2 CPU cores with
# the bundled 0.5B model (G stays at the paper's 4, so the group signal is the real one).
DEMO_SETTINGS: dict[str, Any] = {
    "task": "demo",
    "iterations": 1,
    "group_size": 4,
    "batch_size": 2,
    "validation_size": 4,
    "validation_repeats": 1,
    "concurrency": 4,
    # Caps sized to what each structured reply needs on a 2-core CPU: a 0.5B model that loops
    # otherwise runs to the paper's caps (the optimizer's induce calls of one GRSE iteration
    # generated 2 x 1,200 tokens, about three minutes, `benchmarks/iteration.py --compare`).
    # A critic reply with a few diagnoses fits in 700 tokens, a merge in 400, and a skill of at
    # most 180 words (body cap 240 tokens) with its name and description in 450. Two diagnoses
    # per reply: unbounded, the 0.5B critic listed one per failure type for the same skill
    # until the cap cut every reply, and each repair call did the same (6 calls, 933 s of the
    # demo at e37ab98).
    "critic_max_tokens": 700,
    "max_diagnoses": 2,
    "aggregate_max_tokens": 400,
    "operators": {
        "refine_max_tokens": 400,
        "induce_max_tokens": 450,
        "consolidate_max_tokens": 450,
        "body_token_cap": 240,
    },
}
DEMO_ACTOR_MAX_TOKENS = 192
"""The actor role's cap in the demo (training and test alike), instead of the paper's 4,096."""
DEMO_TEST_LIMIT = 9
"""Test questions the demo scores each library on: the split interleaves its categories, so the
first 9 hold six multi-hop (bridge and comparison) and three memory questions (single-hop,
temporal, multi-hop). Both libraries on all 24 (`--test-limit 0`) would take the demo past 15
minutes on 2 cores (measured: ~22 s per question with the 0.5B model)."""

REPAIR_SETTINGS: dict[str, Any] = {
    # The whole test split: the repair's claim is a test difference, and 9 questions cannot
    # show +0.05 (one question moves the mean by 0.11).
    "validation_size": 6,
    # One team run at a time: the embedded engine serves one request at a time anyway (a
    # 12-question audit took 202 s one run at a time and 196 s four at a time), and the
    # repair's measurements in docs/DEMO.md were made so.
    "concurrency": 1,
    # Repair edits what is there: refine and prune every iteration, no new skills (a 0.5B
    # optimizer writes none that help, GUIDE §5) and nothing to consolidate.
    "schedule": {"refine_every": 1, "induce_every": 0, "consolidate_every": 0, "prune_every": 1},
    # Leave-one-out: each effect is the direct with/without comparison the audit reports. The
    # planted skills do different damage, so masking one at a time does not hide any of them;
    # random masks measured interactions on this team instead (a skill that lowered the reward
    # alone came out helping, beside the others). The whole training split (24 questions, 5
    # runs each), read at 80%: measured on it, each harmful skill lowers the reward by about
    # 0.11, a change of a few questions whose 95% interval can reach above 0 (leave-answer-open
    # [-0.263, +0.012]), so at 95% the probe would keep it. The 80% interval is a screen, not
    # the verdict: every prune it causes is an edit the validation gate must accept, as for the
    # critic's edits.
    "probe": {
        "design": "leave_one_out",
        "questions": 24,
        "budget": 120,
        "split": "train",
        "confidence": 0.8,
    },
}
"""What `repair_config` changes over `DEMO_SETTINGS`: the planted-library repair of the demo."""

_METHOD_KNOBS = (
    "group_size",
    "critic_max_tokens",
    "max_diagnoses",
    "aggregate_max_tokens",
    "operators",
)
"""Keys of `DEMO_SETTINGS` that belong to the method section (each only where the method has
that knob: MASkills has no group)."""


def demo_llm_overrides(
    model: str, *, critic_model: str | None = None, optimizer_model: str | None = None
) -> dict[str, Any]:
    """The model-role overrides of the demo: the embedded model, the actor's cap, and the
    critic's and optimizer's own embedded models (None: the actor's model)."""
    chosen = {"critic": critic_model, "optimizer": optimizer_model}
    return {
        "engine.model": model,
        "actor.max_tokens": DEMO_ACTOR_MAX_TOKENS,
        **{f"{role}.engine_model": name for role, name in chosen.items() if name is not None},
    }


def settings_read_by(method: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` without the loop-level ones `method` does not read with its default
    section (`BaseCreditMethod.unread_settings`), for callers that size every method alike."""
    cls = method_class(method)
    unread = cls.unread_settings(cls.settings_type.model_validate({"name": method}))
    return {key: value for key, value in settings.items() if key not in unread}


def learning_config(
    method: str = "grse", *, training_top_k: int = DEFAULT_TRAINING_TOP_K, **changes: Any
) -> TrainConfig:
    """The demo's training configuration for `method`, with `changes` (loop settings such as
    task, data, iterations, batch_size, validation_size) over `DEMO_SETTINGS`, over the task's
    protocol values (`protocol_train_config`; `training_top_k` is the actor family's, default
    the embedded models' Qwen value)."""
    settings_type = method_class(method).settings_type
    defaults = settings_type.model_validate({"name": method}).model_dump()
    # A demo default the method does not read is left out (SkillMAS validates on its own
    # split); one the caller passes is kept, so the config builder refuses it in one line.
    demo_defaults = settings_read_by(method, DEMO_SETTINGS)
    settings = {**demo_defaults, **{k: v for k, v in changes.items() if v is not None}}
    section: dict[str, Any] = {"name": method}
    for knob in _METHOD_KNOBS:
        value = settings.pop(knob, None)
        if value is None or knob not in settings_type.model_fields:
            continue
        # A nested section (the operators) updates the method's own defaults, which differ
        # between methods (MASkills prunes at -0.3, GRSE at -0.5).
        default = defaults.get(knob)
        section[knob] = {**default, **value} if isinstance(default, dict) else value
    return protocol_train_config(
        {**settings, "method": section}, "learning_config", training_top_k=training_top_k
    )


def repair_config(
    planted: PlantedLibrary,
    method: str = "grse",
    *,
    probe: bool = True,
    **changes: Any,
) -> TrainConfig:
    """The demo's configuration for repairing `planted` (`REPAIR_SETTINGS` over
    `DEMO_SETTINGS`, then `changes`; the task is the planted library's unless `changes` names
    one): training starts from the planted libraries, with probe credit unless `probe` is
    False."""
    settings = {
        "task": planted.task,
        **REPAIR_SETTINGS,
        **{k: v for k, v in changes.items() if v is not None},
    }
    if not probe:
        settings["probe"] = None
    base = learning_config(method, **{k: v for k, v in settings.items() if k != "probe"})
    return TrainConfig.model_validate(
        {
            **base.model_dump(),
            "init_libraries": planted.library_folders(),
            "probe": settings["probe"],
        }
    )


class DemoResult(BaseModel):
    """What the run trained, how the starting and trained libraries scored on the test split,
    question by question, what was learned, and (from a planted library) each planted skill's
    credit and fate."""

    training: TrainResult
    start: EvalSummary
    final: EvalSummary
    comparison: LibraryComparison
    learned: list[LearnedSkill]
    planted: list[PlantedSkillOutcome] = []
    training_s: float
    test_s: float


async def run_demo(
    config: TrainConfig,
    deps: TrainingDeps,
    *,
    test_limit: int | None,
    console: Console,
    display: AbstractContextManager[Any] | None = None,
    resume: bool = False,
    start_test: Path | None = None,
    planted: PlantedLibrary | None = None,
) -> DemoResult:
    """Train (inside `display`, e.g. the live progress), then evaluate the starting and the
    trained libraries greedily on the first `test_limit` test questions, compare them question
    by question and rewrite report.md with what was learned and the transitions (and, with
    `planted`, the planted-skill table). All inside one event loop: the roles' async HTTP
    clients belong to the loop that first used them.
    `resume` continues a run folder (training, then any unfinished test question).
    `start_test` is the evaluation folder of the starting libraries (default: the run folder's
    `test_start`): methods trained from the same libraries with the same loop settings test the
    same team, so they can share one finished evaluation (its `run.json` refuses a folder
    written by a different team). The trained team replays the starting team's test steps
    wherever an agent's prompt is unchanged (greedy). With `planted`, the result lists each
    planted skill's credit and fate."""
    started = time.perf_counter()
    with display or nullcontext():
        training = await run_training(deps, resume=resume)
    trained = time.perf_counter()
    start_team = deps.team_spec().with_libraries(deps.starting_libraries())
    final_team = start_team.with_libraries(
        {
            agent: deps.run.load_library(path, agent, config.library_limit)
            for agent, path in training.final_libraries.items()
        }
    )
    unchanged = {a: lib.content_hash() for a, lib in start_team.libraries().items()} == {
        a: lib.content_hash() for a, lib in final_team.libraries().items()
    }
    folders = {label: deps.run.test_dir(label) for label in TEST_FOLDERS}
    if start_test is not None:
        folders["start"] = start_test
    summaries: dict[str, EvalSummary] = {}
    for label, team in (("start", start_team), ("final", final_team)):
        if label == "final" and unchanged:
            # Greedy decoding with the same libraries answers the same way: reuse, don't rerun.
            console.print("the trained libraries equal the starting ones: final = start score")
            summaries[label] = summaries["start"]
            folders[label] = folders["start"]
            continue
        replay = {} if label == "start" else _recorded_rollouts(folders["start"])
        answerer = TeamAnswerer(
            team, deps.task, deps.provider, SamplingSettings.greedy(), replay=replay
        )
        summaries[label] = await run_evaluation(
            deps.task,
            "test",
            answerer,
            deps.provider,
            folders[label],
            limit=test_limit,
            concurrency=config.concurrency,
            sampling=SamplingSettings.greedy(),
            progress=True,
            console=console,
        )
    tested = [q.id for q in deps.task.split("test")][:test_limit]
    start_label = (
        "planted"
        if planted is not None
        else "starting"
        if any(len(lib) for lib in start_team.libraries().values())
        else "empty"
    )
    comparison = compare_folders(
        folders["start"], folders["final"], tested, seed=config.seed, before_label=start_label
    )
    method = deps.credit_method()
    outcomes = planted_outcomes(deps.run, planted) if planted is not None else []
    write_run_usage(deps)  # the report's usage table then covers the test as well
    write_report(deps.run, method, comparison=comparison, planted=outcomes)
    return DemoResult(
        training=training,
        start=summaries["start"],
        final=summaries["final"],
        comparison=comparison,
        learned=learned_skills(deps.run, method),
        planted=outcomes,
        training_s=trained - started,
        test_s=time.perf_counter() - trained,
    )


class DemoSession(BaseModel):
    """One `run_demo` on a fresh embedded engine: its result, the model usage of this session
    and of every session of the run folder, and the wall time."""

    result: DemoResult
    session_usage: dict[str, Any]
    run_usage: dict[str, Any]
    wall_s: float


def run_demo_session(
    config: TrainConfig,
    run: RunFolder,
    model: str,
    *,
    test_limit: int | None,
    console: Console,
    start_test: Path,
    resume: bool,
    planted: PlantedLibrary | None = None,
) -> DemoSession:
    """`run_demo` in `run` on the embedded `model` with the demo's role settings, the engine
    started for it and stopped after it (the benchmarks' one run of a method)."""
    llm = load_config(overrides=demo_llm_overrides(model))
    started = time.perf_counter()
    with open_endpoints(llm, engine_log=run.path / "engine.log") as endpoints:
        deps = session_deps(config, run, endpoints)
        result = asyncio.run(
            run_demo(
                config,
                deps,
                test_limit=test_limit,
                console=console,
                resume=resume,
                start_test=start_test,
                planted=planted,
            )
        )
        session_usage = endpoints.ledger.report().model_dump(mode="json")
        run_usage = deps.usage() if deps.usage is not None else {}
    return DemoSession(
        result=result,
        session_usage=session_usage,
        run_usage=run_usage,
        wall_s=time.perf_counter() - started,
    )


def _recorded_rollouts(folder: Path) -> dict[str, Rollout]:
    """The finished rollouts of an evaluation folder, by question id."""
    return {
        qid: record.rollout
        for qid, record in EvalFolder(folder).read_predictions().items()
        if record.rollout is not None and not record.failed
    }


def print_planted(console: Console, outcomes: list[PlantedSkillOutcome], probe: bool) -> None:
    """One row per planted skill: its kind, the critic's first credit u1 and its sign, the
    probe's measured effect (with probe credit), which signal decided, and its fate; then the
    repair's summary line (the cells report.md shows too, `planted_table`)."""
    table = Table(title=PLANTED_TITLE)
    for column in planted_columns(outcomes):
        table.add_column(column)
    for outcome in outcomes:
        table.add_row(*planted_row(outcome, probe))
    console.print(table)
    console.print(repair_summary(outcomes), highlight=False)


def print_learned(console: Console, learned: list[LearnedSkill]) -> None:
    """Each skill of the final libraries with its provenance (the changes that made it, the
    gate's numbers, the training questions, diagnoses and feedback behind them) and body."""
    # A heading, not a rule: a rule is as wide as the console, thousands of columns in a log.
    console.print(f"\n[bold]what was learned: {len(learned)} skill(s) in the final libraries[/]")
    if not learned:
        console.print("no skill was accepted: the trained libraries are the empty ones")
    for skill in learned:
        utility = f" (utility {skill.utility:.2f})" if skill.utility is not None else ""
        console.print(
            f"[bold]{escape(skill.agent)} / {escape(skill.name)}[/]{utility}: "
            f"{escape(skill.description)}",
            highlight=False,
        )
        if skill.from_start:
            console.print("  from the starting library, unchanged by training")
        for change in skill.changes:
            lines = [change_text(change), f"  {gate_text(change.gate)}"]
            if change.direction:
                lines.append(f"  direction: {change.direction}")
            lines += [f"  feedback: {item}" for item in change.feedback]
            for question in change.questions:
                first, *rest = question_lines(question)
                lines += [f"  from {first}", *(f"  {line}" for line in rest)]
            for line in lines:
                console.print(f"  {line}", highlight=False, markup=False)
        console.print("  body:")
        for line in skill.body.strip().splitlines():
            console.print(f"    {line}", highlight=False, markup=False)


def print_comparison(console: Console, comparison: LibraryComparison) -> None:
    """The per-question transitions, the 3x3 table, and the paired difference with its
    bootstrap interval."""
    console.print(question_table(comparison))
    console.print(transition_table(comparison))
    console.print(comparison.correct_rule, highlight=False, markup=False)
    console.print(difference_text(comparison), highlight=False, markup=False)
