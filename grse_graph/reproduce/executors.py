"""How each kind of run is made, behind one seam: an `Executor` takes the run's spec, its
folder, the endpoints' configuration and the outcomes of the runs it needs, and returns its
outcome. Every executor resumes what its folder holds (training through the run folder's
checkpoints, evaluations through their finished questions). `EXECUTORS` maps each `RunKind`
to its executor; a table never makes a run any other way."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

from rich.console import Console

from grse_graph.baselines.methods import BASELINES, BaselineName
from grse_graph.baselines.run import run_baseline
from grse_graph.errors import GrseError
from grse_graph.evaluation import run_evaluation
from grse_graph.evaluation.records import EvalSummary
from grse_graph.llm import LLMConfig, SamplingSettings, UsageLedger
from grse_graph.llm.provider import ROLES
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task
from grse_graph.tasks.planted import load_planted
from grse_graph.tasks.registry import load_task
from grse_graph.team import default_team
from grse_graph.team.tool_protocols import FUNCTION_PROTOCOL
from grse_graph.training.actor_tokens import actor_tokens
from grse_graph.training.config import TrainConfig
from grse_graph.training.demo import run_demo
from grse_graph.training.provenance import libraries_by_iteration
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.session import open_endpoints, session_deps

from .manifest import RunKind, RunSpec
from .outcome import RunOutcome, StageTokens, UtilityPoint
from .typing_labels import type_skills

EVAL_DIR = "eval"
"""The evaluation folder inside an eval or baseline run's folder."""
TRAIN_DIR = "run"
"""The training run folder inside a train run's folder."""


@dataclass(frozen=True)
class RunContext:
    """What every executor needs besides the spec: the endpoints of the spec's actor, the data
    path of each task (None: the task's bundled data or its default route), a console and the
    loader options of each task (`load_task`'s; the smoke fixtures' split sizes)."""

    llm: LLMConfig
    data: Mapping[str, str | None]
    console: Console
    task_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def task(self, spec: RunSpec) -> Task:
        """The spec's task, from its data path and options, restricted to its category."""
        options = self.task_options.get(spec.task, {})
        return load_task(spec.task, self.data.get(spec.task), category=spec.category, **options)


class Executor(Protocol):
    def __call__(
        self, spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
    ) -> RunOutcome: ...


def run_llm(spec: RunSpec, llm: LLMConfig) -> LLMConfig:
    """The endpoints' configuration a run is made with: `llm` with each role's cap as the
    spec's `models` names it (the caps its id holds: Table 8's on a remote endpoint,
    `specs.role_caps`)."""
    named = spec.params.get("models", {})
    update: dict[str, Any] = {
        role: llm.role(role).model_copy(update={"max_tokens": int(named[role]["max_tokens"])})
        for role in ROLES
        if role in named and "max_tokens" in named[role]
    }
    return llm.model_copy(update=update) if update else llm


def _accumulated_usage(ledger: UsageLedger, path: Path) -> dict[str, Any]:
    """This session's usage added to the earlier sessions' in `path`, written back and
    returned (a resumed evaluation keeps what its earlier sessions cost)."""
    ledger.write_json(path, accumulate=True)
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _needed(needed: Mapping[str, RunOutcome], run_id: str) -> RunOutcome:
    outcome = needed.get(run_id)
    if outcome is None:
        raise GrseError(f"run {run_id} is needed but did not finish")
    return outcome


def _libraries_of(outcome: RunOutcome) -> dict[str, SkillLibrary]:
    if not outcome.final_libraries:
        raise GrseError(f"run {outcome.run_id} has no final libraries")
    return {
        agent: SkillLibrary.load(Path(path), agent=agent)
        for agent, path in outcome.final_libraries.items()
    }


def execute_eval(
    spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
) -> RunOutcome:
    """The task's team (its agents calling tools by `params.tool_protocol`), greedy, on
    `params.split` (first `params.limit` questions), with empty libraries, those of the run
    `params.libraries_from` (a transfer) or the planted library of `params.planted` (only its
    skills of `params.planted_kinds` when given)."""
    started = time.perf_counter()
    task = ctx.task(spec)
    source = spec.params.get("libraries_from")
    planted = spec.params.get("planted")
    libraries = _libraries_of(_needed(needed, source)) if source else {}
    if planted:
        kinds = spec.params.get("planted_kinds")  # e.g. the helpful skills alone (Table 4)
        libraries = load_planted(Path(planted)).libraries(kinds=kinds)
    protocol = str(spec.params.get("tool_protocol", FUNCTION_PROTOCOL))
    team = default_team(task, tool_protocol=protocol).with_libraries(libraries)
    with open_endpoints(run_llm(spec, ctx.llm), engine_log=folder / "engine.log") as endpoints:
        summary = asyncio.run(
            run_evaluation(
                task,
                str(spec.params.get("split", "test")),
                team,
                endpoints.roles,
                folder / EVAL_DIR,
                limit=spec.params.get("limit"),
                concurrency=endpoints.roles.concurrency("actor"),
                sampling=SamplingSettings.greedy(),
                progress=False,
                console=ctx.console,
            )
        )
        usage = _accumulated_usage(endpoints.ledger, folder / EVAL_DIR / "usage.json")
    return _evaluation_outcome(spec, started, summary, usage)


def _evaluation_outcome(
    spec: RunSpec, started: float, summary: EvalSummary, usage: dict[str, Any]
) -> RunOutcome:
    """The outcome of one evaluation run (a library or a baseline on a split)."""
    return _outcome(spec, started, summary=summary, usage=usage, test_s=summary.elapsed_s)


def _outcome(spec: RunSpec, started: float, **measured: Any) -> RunOutcome:
    """The run's outcome: its id and kind, the wall time since `started` and what it measured
    (`RunOutcome`'s other fields)."""
    return RunOutcome(
        run_id=spec.run_id, kind=spec.kind, wall_s=time.perf_counter() - started, **measured
    )


def execute_baseline(
    spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
) -> RunOutcome:
    """A single-model baseline (`spec.method`) with its `params.settings` (Table 8's) on
    `params.split`, resumable."""
    if spec.method not in BASELINES:
        raise GrseError(f"unknown baseline {spec.method!r} (known: {', '.join(BASELINES)})")
    started = time.perf_counter()
    task = ctx.task(spec)
    with open_endpoints(run_llm(spec, ctx.llm), engine_log=folder / "engine.log") as endpoints:
        summary = asyncio.run(
            run_baseline(
                cast(BaselineName, spec.method),
                task,
                str(spec.params.get("split", "test")),
                endpoints.roles,
                folder / EVAL_DIR,
                settings=spec.params.get("settings"),
                limit=spec.params.get("limit"),
                concurrency=endpoints.roles.concurrency("actor"),
                progress=False,
                console=ctx.console,
            )
        )
        usage = _accumulated_usage(endpoints.ledger, folder / EVAL_DIR / "usage.json")
    return _evaluation_outcome(spec, started, summary, usage)


def utility_trajectories(run: RunFolder) -> list[UtilityPoint]:
    """Every skill's recorded utility after each saved iteration (iteration 0: the start)."""
    return [
        UtilityPoint(iteration=iteration, agent=agent, skill=skill.name, utility=skill.utility)
        for iteration, agents in libraries_by_iteration(run).items()
        for agent, skills in agents.items()
        for skill in skills
    ]


def actor_stages(run: RunFolder) -> dict[str, StageTokens]:
    """The actor's calls and tokens of the training rollouts and of validation, as
    `actor_tokens` reads them (steps replayed from an earlier execution are not paid again)."""
    tokens = actor_tokens(run)
    return {
        stage: StageTokens(
            calls=spent.model_calls,
            prompt_tokens=spent.prompt_tokens,
            completion_tokens=spent.completion_tokens,
        )
        for stage, spent in (("rollouts", tokens.training), ("validation", tokens.validation))
    }


def execute_train(
    spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
) -> RunOutcome:
    """Train with `params.config` (a `TrainConfig`), then test the starting and the trained
    libraries greedily on the first `params.test_limit` test questions and compare them
    (`run_demo`). The starting libraries' test is shared with the eval run
    `params.start_test_from` when given; `params.planted` names a planted-library JSON whose
    skills' credit and fate are read back. An existing run folder is resumed."""
    started = time.perf_counter()
    config = TrainConfig.model_validate(spec.params["config"])
    run = RunFolder(folder / TRAIN_DIR)
    resume = run.exists()
    if resume and run.read_config() != config:
        raise GrseError(f"{run.path} holds a run with other settings than this run's spec")
    start_from = spec.params.get("start_test_from")
    start_test = _needed(needed, start_from) if start_from else None
    start_folder = (
        Path(start_test.summary.out_dir)
        if start_test is not None and start_test.summary is not None
        else None
    )
    planted_file = spec.params.get("planted")
    planted = load_planted(Path(planted_file)) if planted_file else None
    with open_endpoints(run_llm(spec, ctx.llm), engine_log=folder / "engine.log") as endpoints:
        deps = session_deps(config, run, endpoints, task=ctx.task(spec))
        result = asyncio.run(
            run_demo(
                config,
                deps,
                test_limit=spec.params.get("test_limit"),
                console=ctx.console,
                resume=resume,
                start_test=start_folder,
                planted=planted,
            )
        )
        usage: dict[str, Any] = deps.usage() if deps.usage is not None else {}
    return _outcome(
        spec,
        started,
        summary=result.final,
        start_summary=result.start,
        comparison=result.comparison,
        gates=result.training.gates,
        final_libraries={
            agent: str((run.path / path).resolve())
            for agent, path in result.training.final_libraries.items()
        },
        utilities=utility_trajectories(run),
        actor_stages=actor_stages(run),
        planted=result.planted,
        usage=usage,
        training_s=result.training_s,
        test_s=result.test_s,
    )


def execute_typing(
    spec: RunSpec, folder: Path, ctx: RunContext, needed: Mapping[str, RunOutcome]
) -> RunOutcome:
    """Label every skill of the final libraries of `params.libraries_from` with one of
    `params.labels`, asking the critic model at temperature 0."""
    started = time.perf_counter()
    source = _needed(needed, str(spec.params["libraries_from"]))
    libraries = _libraries_of(source)
    labels = [str(label) for label in spec.params["labels"]]
    with open_endpoints(run_llm(spec, ctx.llm), engine_log=folder / "engine.log") as endpoints:
        types = asyncio.run(type_skills(endpoints.roles, libraries, labels))
        usage = endpoints.ledger.report().model_dump(mode="json")
    return _outcome(spec, started, skill_types=types, usage=usage)


EXECUTORS: dict[RunKind, Executor] = {
    "eval": execute_eval,
    "baseline": execute_baseline,
    "train": execute_train,
    "typing": execute_typing,
}
"""The executor of each kind of run."""
