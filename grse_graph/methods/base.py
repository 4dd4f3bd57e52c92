"""The credit-method seam: what the training graph asks a method, round by round.

The loop is the same for every method (one engine; each method's behaviour comes in through
the `CreditMethod` hooks, as GEPA's engine takes its strategies as objects): choose the round's
questions -> rollouts (each unit's team chosen by the method) -> credit units -> one credit
call per unit -> the round update -> candidates (the update's own libraries or the shared
operators) -> validation -> commit by the method's policy.

Method state goes only through `state_type` (a pydantic model, one record per round in
RUN/method_state.jsonl); the method object itself keeps none. A method's record type fixes
`method` to the `Literal` of its name, so a record on disk names the method that wrote it.
`BaseCreditMethod` supplies the defaults; register the class in `grse_graph.methods.registry`.
A method names the loop-level `TrainConfig` settings it does not read (`ignored_settings`,
`unread_settings`), so a run that sets one is refused instead of silently running without it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.base import OperatorSettings
from grse_graph.methods.operators.registry import OPERATORS, Operator
from grse_graph.methods.operators.schedule import OPERATOR_ORDER
from grse_graph.methods.plan import AggregationResult, FailureDiagnosis
from grse_graph.methods.rounds import (
    CommitPolicy,
    RoundRequest,
    RoundUpdate,
    StartInputs,
    TeamRequest,
    UpdateInputs,
    sampled_questions,
)
from grse_graph.methods.utility import UtilityRule, replace_utilities
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.rollout import Rollout
from grse_graph.team.spec import TeamSpec


class MethodSettings(BaseModel):
    """A method's knobs: the `method` section of `TrainConfig`, chosen by `name`.

    Subclasses fix `name` to a `Literal` default and add their fields; every value has a
    default, so `{"name": "grse"}` is a complete section.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str


class ExternalMethodSettings(MethodSettings):
    """The section of a method that is not one of `TrainConfig`'s built-in sections.

    Its fields are kept as given; the method validates them with its own `settings_type`
    when it is created (`grse_graph.methods.registry.create_method`).
    """

    model_config = ConfigDict(frozen=True, extra="allow")


class CreditUnit(BaseModel):
    """The input of one credit call: a question and the training rollouts it judges."""

    model_config = ConfigDict(frozen=True)

    unit_id: str
    question_id: str
    rollout_ids: list[str]


class QuestionRollouts(BaseModel):
    """One batch question's training rollouts (ids and rewards, in group order)."""

    model_config = ConfigDict(frozen=True)

    question_id: str
    rollout_ids: list[str]
    rewards: list[float]


class CitedDiagnosis(BaseModel):
    """A checked failure diagnosis a credit record offers as evidence (`is_hypothesis`: no
    successful rollout to compare with)."""

    diagnosis: FailureDiagnosis
    is_hypothesis: bool = False


class CreditRecord(BaseModel):
    """What every method's credit record holds: one line of RUN/critiques.jsonl.

    `method` is the discriminator: a subclass fixes it to the `Literal` of its method's name.
    `kept` is False for a unit the method decided not to credit (for example a DAPO-filtered
    group); `error` says why a credit call failed (the unit then contributes no evidence and
    the report counts it).
    """

    method: str
    iteration: int
    unit_id: str
    question_id: str
    rollout_ids: list[str]
    rewards: list[float]
    kept: bool = True
    error: str | None = None
    # The question and its gold answer, so a skill's provenance can name the training
    # questions it came from (None in records written before they were kept).
    question: str | None = None
    gold_answer: str | None = None

    @property
    def credited(self) -> bool:
        """Whether this record carries evidence (kept and its credit call succeeded)."""
        return self.kept and self.error is None

    def cited_diagnoses(self) -> list[CitedDiagnosis]:
        """The checked failure diagnoses this record offers as evidence for a skill change
        (none here: a method whose credit diagnoses failures overrides it). A skill's
        provenance reads them through this hook, so it names no method's record type."""
        return []

    def feedback_for(self, agent: str) -> list[str]:
        """The record's agent-level feedback about `agent` (none here; see `cited_diagnoses`)."""
        return []


class CreditUnits(BaseModel):
    """What a batch yields: the units to credit, and records of units skipped without a call."""

    units: list[CreditUnit] = Field(default_factory=list)
    skipped: list[SerializeAsAny[CreditRecord]] = Field(default_factory=list)


@dataclass(frozen=True)
class CreditInputs:
    """Everything one credit call may read (not persisted: it holds the provider)."""

    iteration: int
    question: TaskQuestion
    libraries: Mapping[str, SkillLibrary]
    rollouts: Sequence[Rollout]
    provider: ChatModelProvider
    team: TeamSpec
    task: Task


@dataclass(frozen=True)
class ReportInputs:
    """What a method's section of report.md may read: the run's credit records (file order)
    and its method states in round order (empty for a stateless method)."""

    records: Sequence[CreditRecord]
    states: Sequence[BaseModel] = ()


@dataclass(frozen=True)
class EvolutionSpec:
    """The operators a method runs: `order` filtered by the run's `OperatorSchedule` at each
    iteration, looked up in `operators`, with `settings` (caps, prune threshold, new skills
    per agent)."""

    order: tuple[str, ...] = OPERATOR_ORDER
    settings: OperatorSettings = field(default_factory=OperatorSettings)
    operators: Mapping[str, Operator] = field(default_factory=lambda: OPERATORS)


R = TypeVar("R", bound=CreditRecord)
S = TypeVar("S", bound=MethodSettings)


class CreditMethod(Protocol):
    """A training credit method, as the training graph calls it (see the module docstring)."""

    name: ClassVar[str]
    title: ClassVar[str]
    settings_type: ClassVar[type[MethodSettings]]
    record_type: ClassVar[type[CreditRecord]]
    state_type: ClassVar[type[BaseModel] | None]
    settings: MethodSettings

    def rollouts_per_question(self) -> int:
        """Training rollouts per batch question (G)."""
        ...

    def credit_units(self, iteration: int, groups: Sequence[QuestionRollouts]) -> CreditUnits:
        """The units to credit and the records of skipped ones (deterministic unit ids)."""
        ...

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> CreditRecord:
        """One credit call. May raise `StructuredOutputError` or `ModelRequestRefused`; the
        graph then stores `failed_record(...)` and the run goes on."""
        ...

    def failed_record(self, unit: CreditUnit, inputs: CreditInputs, error: str) -> CreditRecord:
        """The record of a unit whose credit call failed with `error`."""
        ...

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        """The iteration's edit directions and induction evidence from all its credit records
        (`inputs.records`: kept, failed and skipped ones alike, in file order)."""
        ...

    def initial_state(self, inputs: StartInputs) -> BaseModel | None:
        """The method's state before round 1 (stored as iteration 0; None: stateless)."""
        ...

    def round_questions(self, request: RoundRequest) -> list[str]:
        """The ids of the training questions the round uses, in the order they run."""
        ...

    def rounds(self, iterations: int) -> int:
        """How many rounds a run of `iterations` training iterations has."""
        ...

    def team_for(self, request: TeamRequest) -> TeamSpec:
        """The team that runs one unit (a training rollout or a validation execution)."""
        ...

    async def update(self, inputs: UpdateInputs) -> RoundUpdate:
        """The round update: the plan, the next state and (optionally) the next libraries."""
        ...

    def commit_policy(self, iteration: int, iterations: int) -> CommitPolicy:
        """How round `iteration`'s libraries are committed."""
        ...

    def committed_state(
        self, state: BaseModel | None, base_score: float | None
    ) -> BaseModel | None:
        """The state the round commits: the update's `state`, given the validation score of
        the round's base libraries (None when they did not run the validation set)."""
        ...

    def utility_rule(self) -> UtilityRule:
        """The rule that turns the plan into recorded utilities."""
        ...

    def evolution(self) -> EvolutionSpec:
        """The operators, their order and settings."""
        ...

    def summary(self) -> str:
        """One line naming the method's settings, for the report header."""
        ...

    def report_lines(self, inputs: ReportInputs) -> list[str]:
        """The method's markdown section of report.md (starting with its `## ` heading)."""
        ...


class BaseCreditMethod(Generic[S, R]):
    """Defaults for a `CreditMethod`: no state, a new sample of questions every round, the
    task's team, one rollout per question, one unit per rollout, the plan as the round update,
    the per-agent gate, GRSE's replace rule, the shared operators in `OPERATOR_ORDER`, a
    generic report.

    A subclass sets `name`, `settings_type`, `record_type` and implements `credit` and
    `plan`; everything else is optional.
    """

    name: ClassVar[str]
    title: ClassVar[str] = "Training"
    settings_type: ClassVar[type[MethodSettings]] = MethodSettings
    record_type: ClassVar[type[CreditRecord]] = CreditRecord
    state_type: ClassVar[type[BaseModel] | None] = None
    ignored_settings: ClassVar[frozenset[str]] = frozenset()
    """`TrainConfig` fields this method never reads (none: the shared loop reads them all)."""

    def __init__(self, settings: S) -> None:
        self.settings: S = settings

    @classmethod
    def unread_settings(cls, settings: MethodSettings) -> frozenset[str]:
        """The `TrainConfig` fields a run of this method with `settings` does not read:
        `ignored_settings`, plus those a method setting switches off (override to add them)."""
        return cls.ignored_settings

    def initial_state(self, inputs: StartInputs) -> BaseModel | None:
        return None

    def round_questions(self, request: RoundRequest) -> list[str]:
        return sampled_questions(request)

    def rounds(self, iterations: int) -> int:
        return iterations

    def team_for(self, request: TeamRequest) -> TeamSpec:
        return request.team.with_libraries(request.libraries)

    def rollouts_per_question(self) -> int:
        return 1

    def credit_units(self, iteration: int, groups: Sequence[QuestionRollouts]) -> CreditUnits:
        """One unit per rollout, id ``<rollout id>-credit`` (rollout ids name the iteration)."""
        return CreditUnits(
            units=[
                CreditUnit(
                    unit_id=f"{rid}-credit",
                    question_id=g.question_id,
                    rollout_ids=[rid],
                )
                for g in groups
                for rid in g.rollout_ids
            ]
        )

    async def credit(self, unit: CreditUnit, inputs: CreditInputs) -> R:
        raise NotImplementedError(f"{type(self).__name__} must implement credit")

    async def plan(self, inputs: UpdateInputs) -> AggregationResult:
        raise NotImplementedError(f"{type(self).__name__} must implement plan")

    def base_fields(self, unit: CreditUnit, inputs: CreditInputs) -> dict[str, Any]:
        """The `CreditRecord` fields every record of `unit` carries."""
        return {
            "method": self.name,
            "iteration": inputs.iteration,
            "unit_id": unit.unit_id,
            "question_id": unit.question_id,
            "rollout_ids": list(unit.rollout_ids),
            "rewards": [r.reward for r in inputs.rollouts],
            "question": inputs.question.question,
            "gold_answer": inputs.question.answer,
        }

    def failed_record(self, unit: CreditUnit, inputs: CreditInputs, error: str) -> CreditRecord:
        return self.record_type.model_validate({**self.base_fields(unit, inputs), "error": error})

    async def update(self, inputs: UpdateInputs) -> RoundUpdate:
        """The plan of the round's credit records; the shared operators then propose the
        candidates and the method keeps no state."""
        return RoundUpdate(plan=await self.plan(inputs))

    def commit_policy(self, iteration: int, iterations: int) -> CommitPolicy:
        return CommitPolicy(kind="gate")

    def committed_state(
        self, state: BaseModel | None, base_score: float | None
    ) -> BaseModel | None:
        return state

    def utility_rule(self) -> UtilityRule:
        return replace_utilities

    def evolution(self) -> EvolutionSpec:
        return EvolutionSpec()

    def summary(self) -> str:
        fields = self.settings.model_dump(exclude={"name"})
        shown = ", ".join(f"{k}={v}" for k, v in fields.items() if not isinstance(v, dict))
        return f"method {self.name}" + (f": {shown}" if shown else "")

    def report_lines(self, inputs: ReportInputs) -> list[str]:
        return [*_CREDIT_HEADING, *iteration_rows(inputs.records, _credit_row)]


def records_of(records: Sequence[CreditRecord], kind: type[R]) -> list[R]:
    """The records of type `kind` (a method's own among a run's records)."""
    return [r for r in records if isinstance(r, kind)]


def iteration_rows(records: Sequence[R], row: Callable[[int, list[R]], str]) -> list[str]:
    """One table row per iteration of `records`, in order: `row(iteration, its records)`."""
    iterations = sorted({r.iteration for r in records})
    return [row(t, [r for r in records if r.iteration == t]) for t in iterations]


_CREDIT_HEADING = (
    "## Credit",
    "",
    "| iteration | units | credited | skipped | failed |",
    "| ---: | ---: | ---: | ---: | ---: |",
)


def _credit_row(iteration: int, rows: list[CreditRecord]) -> str:
    return (
        f"| {iteration} | {len(rows)} | {sum(r.credited for r in rows)} | "
        f"{sum(not r.kept for r in rows)} | {sum(r.error is not None for r in rows)} |"
    )
