"""Every number of a GRSE training run, with the paper's defaults (GUIDE §3)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from grse_graph.llm.provider import SamplingSettings
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.methods.operators import OperatorSchedule


class TrainConfig(BaseModel):
    """Settings of one training run. Written to RUN/config.json and read back on resume.

    Defaults are the paper's: T = 5 iterations, G = 4 rollouts per question, 24 training
    questions per iteration (LoCoMo), tolerance delta = 0.02, library limit L = 4, training
    sampling temperature 1.0 / top-p 0.95 / top-k 20, greedy validation, critic cap 4,000 tokens.
    `schedule` None means the task's paper schedule (`OperatorSchedule.for_task`).
    `validation_size` None means the whole validation split.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str
    data: str | None = None
    method: Literal["grse"] = "grse"
    iterations: int = Field(default=5, ge=1)
    group_size: int = Field(default=4, ge=1)
    batch_size: int = Field(default=24, ge=1)
    validation_size: int | None = Field(default=None, ge=1)
    validation_repeats: int = Field(default=1, ge=1)
    delta: float = Field(default=0.02, ge=0.0)
    library_limit: int = Field(default=4, ge=1)
    schedule: OperatorSchedule | None = None
    eps: float = Field(default=1e-6, gt=0.0)
    dapo_filter: bool = False
    structured: bool = True
    with_labels: bool = False
    review: bool = False
    seed: int = 0
    skill_mode: Literal["inline", "tool"] = "inline"
    concurrency: int = Field(default=4, ge=1)
    first_agent_n: bool = Field(
        default=True,
        description="sample the first agent's first reply of a group in one call with n=G",
    )
    max_attempts: int = Field(
        default=2, ge=1, description="tries per rollout/critic/validation unit on transient errors"
    )
    critic_max_tokens: int | None = Field(
        default=None, ge=1, description="critic cap; None: the critic role's (paper: 4,000)"
    )
    payload_limits: PayloadLimits = Field(default_factory=PayloadLimits)
    actor_max_tokens: int | None = Field(
        default=None, ge=1, description="cap per agent call; None: the actor role's (paper: 4,096)"
    )
    training_sampling: SamplingSettings = Field(
        default_factory=lambda: SamplingSettings.training(top_k=20)
    )
    validation_sampling: SamplingSettings = Field(default_factory=SamplingSettings.greedy)

    @model_validator(mode="after")
    def _sampling_has_no_fixed_seed(self) -> TrainConfig:
        # Each rollout gets its own seed; a fixed seed here would make the group identical.
        if self.training_sampling.seed is not None:
            raise ValueError("training_sampling.seed must be unset: seeds are set per rollout")
        return self

    def operator_schedule(self) -> OperatorSchedule:
        """The configured schedule, or the paper's schedule for this task."""
        return self.schedule if self.schedule is not None else OperatorSchedule.for_task(self.task)
