"""What the training nodes depend on: `TrainingDeps` (given by the caller) and the
`TrainingContext` built from it once per graph (method, team, questions, stores)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from grse_graph.errors import GrseError
from grse_graph.jsonl import JsonlStore
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.base import CreditMethod, CreditRecord
from grse_graph.methods.registry import BUILTIN_METHODS, MethodClass, create_method
from grse_graph.methods.rounds import TeamRequest
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team import TeamSpec, default_team

from .config import TrainConfig
from .openings import GroupOpenings
from .progress import ProgressCallback, ProgressEvent, Stage
from .records import AggregateRecord
from .run_folder import RunFolder


@dataclass(frozen=True)
class TrainingDeps:
    """Everything the training graph needs, passed explicitly.

    `team` defaults to the task's `default_team`; `initial_libraries` to the libraries named
    by `config.init_libraries` (else empty ones). `usage` returns the current per-role
    accounting (written to usage.json by the report node); `on_progress` receives progress
    events. `methods` is the method registry `config.method` is looked up in (add your own
    method with `{**BUILTIN_METHODS, "mine": MyMethod}`).
    """

    task: Task
    provider: ChatModelProvider
    config: TrainConfig
    run: RunFolder
    team: TeamSpec | None = None
    initial_libraries: Mapping[str, SkillLibrary] | None = None
    on_progress: ProgressCallback | None = None
    usage: Callable[[], dict[str, Any]] | None = None
    methods: Mapping[str, MethodClass] = field(default_factory=lambda: BUILTIN_METHODS)

    def team_spec(self) -> TeamSpec:
        """The team whose libraries are trained."""
        if self.team is not None:
            return self.team
        return default_team(
            self.task,
            skill_mode=self.config.skill_mode,
            topology=self.config.topology,
            prompt_layout=self.config.prompt_layout,
            tool_protocol=self.config.tool_protocol,
        )

    def credit_method(self) -> CreditMethod:
        """The configured credit method, constructed from its settings section."""
        return create_method(self.config.method, self.methods)

    def starting_libraries(self) -> dict[str, SkillLibrary]:
        """The libraries iteration 1 starts from (agents without one start empty)."""
        if self.initial_libraries is not None:
            return dict(self.initial_libraries)
        return {
            agent: SkillLibrary.load(Path(folder), agent=agent, limit=self.config.library_limit)
            for agent, folder in self.config.init_libraries.items()
        }

    def emit(self, event: ProgressEvent) -> None:
        """Send a progress event to the callback, if any."""
        if self.on_progress is not None:
            self.on_progress(event)


def _questions(task: Task) -> dict[str, TaskQuestion]:
    found: dict[str, TaskQuestion] = {}
    for split in ("train", "validation"):
        for q in task.split(split):
            found[q.id] = q
    return found


@dataclass(frozen=True)
class TrainingContext:
    """The per-graph dependencies every node unit takes: built once by `TrainingContext.of`."""

    deps: TrainingDeps
    method: CreditMethod
    team: TeamSpec
    questions: Mapping[str, TaskQuestion]
    openings: GroupOpenings
    credits: JsonlStore[CreditRecord]

    @classmethod
    def of(cls, deps: TrainingDeps) -> TrainingContext:
        """Resolve the method, the team and the question index of `deps`."""
        method = deps.credit_method()
        return cls(
            deps=deps,
            method=method,
            team=deps.team_spec(),
            questions=_questions(deps.task),
            openings=GroupOpenings(deps.run.openings),
            credits=deps.run.credits(method.record_type),
        )

    @property
    def config(self) -> TrainConfig:
        return self.deps.config

    @property
    def run(self) -> RunFolder:
        return self.deps.run

    @property
    def task(self) -> Task:
        return self.deps.task

    @property
    def provider(self) -> ChatModelProvider:
        return self.deps.provider

    def load(self, libraries: Mapping[str, str]) -> dict[str, SkillLibrary]:
        """The libraries saved at these run-folder paths, by agent."""
        return {
            agent: self.run.load_library(path, agent, self.config.library_limit)
            for agent, path in libraries.items()
        }

    def prior_state(self, iteration: int) -> BaseModel | None:
        """The method's state before round `iteration`: the latest one an earlier round (or
        setup, as iteration 0) committed; None for a stateless method. Blocking file I/O."""
        state_type = self.method.state_type
        if state_type is None:
            return None
        earlier = [r for r in self.run.method_states.read() if r.iteration < iteration]
        return state_type.model_validate(earlier[-1].state) if earlier else None

    def team_for(
        self,
        libraries: Mapping[str, SkillLibrary],
        question: TaskQuestion,
        state: BaseModel | None,
        *,
        training: bool,
        seed: int,
    ) -> TeamSpec:
        """The team the method chooses for one unit (see `CreditMethod.team_for`)."""
        return self.method.team_for(
            TeamRequest(
                team=self.team,
                libraries=libraries,
                question=question,
                state=state,
                training=training,
                seed=seed,
            )
        )

    def plan_of(self, iteration: int) -> AggregateRecord:
        """The iteration's plan (`GrseError` if the plan node has not written it yet)."""
        record = self.run.aggregates.get(str(iteration))
        if record is None:
            raise GrseError(f"{self.run.aggregates.path}: no plan for iteration {iteration}")
        return record

    def question(self, qid: str) -> TaskQuestion:
        """A train or validation question by id (`GrseError` if the task has none)."""
        try:
            return self.questions[qid]
        except KeyError:
            raise GrseError(f"task {self.task.name}: no question with id {qid!r}") from None

    def started(self, iteration: int, stage: Stage, total: int = 0) -> None:
        """Emit `stage_started`."""
        self.deps.emit(
            ProgressEvent(kind="stage_started", iteration=iteration, stage=stage, total=total)
        )

    def done(self, iteration: int, stage: Stage, unit_id: str, reused: bool) -> None:
        """Emit `unit_done`."""
        self.deps.emit(
            ProgressEvent(
                kind="unit_done", iteration=iteration, stage=stage, unit_id=unit_id, reused=reused
            )
        )
