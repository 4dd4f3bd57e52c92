"""What the training loop asks a method around a round, and what it gets back: the inputs
and outputs of the round hooks of `grse_graph.methods.base.CreditMethod`.

Nothing here imports the training package: the loop builds these values from its context.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, SerializeAsAny

from grse_graph.errors import GrseError
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.plan import AggregationResult
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.rollout import Rollout
from grse_graph.team.spec import TeamSpec

if TYPE_CHECKING:
    from grse_graph.methods.base import CreditRecord


@dataclass(frozen=True)
class StartInputs:
    """What a method's starting state may read: the task's team, the starting libraries (by
    agent), the train split, the configured batch size and the run's seed."""

    team: TeamSpec
    libraries: Mapping[str, SkillLibrary]
    train: Sequence[TaskQuestion]
    size: int
    seed: int


@dataclass(frozen=True)
class RoundRequest:
    """What choosing a round's training questions may read. `state` is the method's state
    before the round (None for stateless methods)."""

    iteration: int
    train: Sequence[TaskQuestion]
    size: int
    seed: int
    state: BaseModel | None = None


def sampled_questions(request: RoundRequest) -> list[str]:
    """The default round questions: a sample of `size` train questions seeded by the run's
    seed and the iteration, kept in split order (a new sample every round)."""
    train = list(request.train)
    if not train:
        raise GrseError("the train split is empty")
    rng = random.Random(f"{request.seed}:{request.iteration}")
    chosen = set(rng.sample(range(len(train)), min(request.size, len(train))))
    return [q.id for i, q in enumerate(train) if i in chosen]


@dataclass(frozen=True)
class TeamRequest:
    """What choosing the team of one unit may read.

    `team` is the task's team; `libraries` the unit's libraries by agent (an agent the method
    added, such as a SkillMAS specialist, included); `state` the method's state before the
    round; `training` is False for validation executions; `seed` is derived from the unit id,
    for a method that chooses at random (the same unit chooses the same way on a rerun).
    """

    team: TeamSpec
    libraries: Mapping[str, SkillLibrary]
    question: TaskQuestion
    state: BaseModel | None
    training: bool
    seed: int


@dataclass(frozen=True)
class UpdateInputs:
    """Everything a round update may read (not persisted: it holds the provider).

    `records` are the round's credit records (kept, failed and skipped ones, in file order),
    `rollouts` the round's training rollouts by id, `libraries` the round's base libraries,
    `state` the method's state before the round, `iterations` the configured number of
    training rounds.
    """

    iteration: int
    iterations: int
    records: Sequence[CreditRecord]
    libraries: Mapping[str, SkillLibrary]
    rollouts: Mapping[str, Rollout]
    questions: Mapping[str, TaskQuestion]
    provider: ChatModelProvider
    team: TeamSpec
    task: Task
    library_limit: int
    state: BaseModel | None = None


class RoundUpdate(BaseModel):
    """What a round update gives the loop (written to the run folder by the plan stage).

    - `plan`: the round's edit directions, induction evidence and invocation counts;
    - `state`: the method's state after the round (committed by the commit stage);
    - `libraries`: the complete next libraries (an agent left out is removed from the team),
      or None for the shared operators to propose candidates from `plan`;
    - `score`: the round's own score for its commit record (None: the validation score).
    """

    model_config = ConfigDict(frozen=True)

    plan: AggregationResult
    state: SerializeAsAny[BaseModel] | None = None
    libraries: dict[str, SkillLibrary] | None = None
    score: float | None = None


CommitKind = Literal["gate", "accept", "keep"]


class CommitPolicy(BaseModel):
    """How a round's libraries are committed.

    - `gate`: every changed agent's candidate runs the validation set beside the base and is
      kept only if it does not drop (the per-agent gate);
    - `accept`: the candidates are the next libraries, unvalidated (the base runs the
      validation set when `validate_base`, for the method's state and report);
    - `keep`: an execution-only round: the libraries stay, nothing is committed but the
      method's state (the base runs the validation set when `validate_base`).
    """

    model_config = ConfigDict(frozen=True)

    kind: CommitKind = "gate"
    validate_base: bool = True

    @property
    def runs_validation(self) -> bool:
        """Whether the round runs the validation set at all (the gate always does)."""
        return self.kind == "gate" or self.validate_base
