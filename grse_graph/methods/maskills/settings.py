"""MASkills' section of `TrainConfig` (spec maskills.md §1.6 for the reference values).

The loop-level settings (iterations, batch, tolerance delta, validation, library limit,
schedule, sampling, concurrency) are shared with GRSE in `TrainConfig`. The critic cap, payload
caps and operator caps default to exactly GRSE's defaults (the GRSE harness ran its MASkills
baseline with the same critic and optimizer model and caps, spec §12.6), so a comparison with
default settings differs only in the method.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grse_graph.methods.base import MethodSettings
from grse_graph.methods.grse.payload import PayloadLimits
from grse_graph.methods.operators.base import OperatorSettings

PRUNE_UTILITY_THRESHOLD = -0.3
"""The reference's prune threshold (hard-coded in `SkillEvolutionOptimizer`, spec §5.3)."""


def maskills_operator_settings() -> OperatorSettings:
    """GRSE's operator caps (and one new skill per agent) with MASkills' prune threshold."""
    return OperatorSettings(prune_utility_threshold=PRUNE_UTILITY_THRESHOLD)


class MaskillsSettings(MethodSettings):
    """MASkills' knobs.

    - `utility_keep`: weight of the old utility in the moving average
      u <- keep * u + (1 - keep) * batch mean (reference: 0.6, hard-coded; spec §4).
    - `hard_case_threshold`: trajectories with reward at or below it are induction evidence
      for every agent (reference `hard_trajectory_threshold` 0.5; spec §3).
    - `max_hard_cases`: hard cases shown to the induce prompt (reference: the first 6; §5.4).
    - `max_residuals`: residual summaries kept per agent (reference: 5; spec §3).
    - `merge_max_tokens`: cap of the optimizer call that merges several credits of one skill
      (reference: 600; spec §3).
    - `skill_excerpt_chars`: characters of each skill body in the critic's "Invoked skills"
      block (reference: 800; spec §2.2).
    - `answer_brevity_hint`: tell the critic that gold answers are one or two words (reference:
      on in the HotpotQA runner, off for LoCoMo); None means on for the `hotpotqa` task only.
    - `critic_max_tokens`: None means the critic role's cap (GRSE's default; reference 1,800).
    - `payload_limits`: caps on the task context and step outputs in the critic payload.
    - `operators`: operator caps (GRSE's) with `prune_utility_threshold` -0.3 (reference) and
      `max_new_skills_per_agent` 1 (reference: at most one induced skill per agent).
    """

    name: Literal["maskills"] = "maskills"
    utility_keep: float = Field(default=0.6, ge=0.0, le=1.0)
    hard_case_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    max_hard_cases: int = Field(default=6, ge=0)
    max_residuals: int = Field(default=5, ge=0)
    merge_max_tokens: int = Field(default=600, ge=1)
    skill_excerpt_chars: int = Field(default=800, ge=1)
    answer_brevity_hint: bool | None = None
    critic_max_tokens: int | None = Field(default=None, ge=1)
    payload_limits: PayloadLimits = Field(default_factory=PayloadLimits)
    operators: OperatorSettings = Field(default_factory=maskills_operator_settings)

    def brevity_hint_for(self, task: str) -> bool:
        """Whether the critic gets the short-answer hint on this task."""
        if self.answer_brevity_hint is not None:
            return self.answer_brevity_hint
        return task == "hotpotqa"

    @property
    def prune_utility_threshold(self) -> float:
        """The prune threshold (also the merge fallback's low_utility threshold)."""
        return self.operators.prune_utility_threshold
