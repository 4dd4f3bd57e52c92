"""The operator schedule Omega(t): which operators run at iteration t."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from grse_graph.methods.operators.schema import OperatorName

# The order operators run in within one iteration. Prune runs before induce so a library at its
# limit L can make room before a new skill is considered.
OPERATOR_ORDER: tuple[OperatorName, ...] = ("refine", "consolidate", "prune", "induce")

# Paper schedule: prune every 2nd iteration on HotpotQA, every 3rd on LoCoMo.
_PRUNE_EVERY_BY_TASK: dict[str, int] = {"hotpotqa": 2, "locomo": 3}


class OperatorSchedule(BaseModel):
    """Operator periods in iterations. Iterations are numbered from 1; an operator with period
    k runs when `iteration % k == 0`; period 0 disables it. Defaults are the paper's."""

    model_config = ConfigDict(frozen=True)

    refine_every: int = Field(default=1, ge=0)
    induce_every: int = Field(default=1, ge=0)
    consolidate_every: int = Field(default=2, ge=0)
    prune_every: int = Field(default=2, ge=0)

    def active(self, iteration: int) -> list[OperatorName]:
        """The operators that run at `iteration` (1-based), in execution order."""
        if iteration < 1:
            raise ValueError(f"iteration must be >= 1, got {iteration}")
        periods: dict[OperatorName, int] = {
            "refine": self.refine_every,
            "induce": self.induce_every,
            "consolidate": self.consolidate_every,
            "prune": self.prune_every,
        }
        return [op for op in OPERATOR_ORDER if periods[op] > 0 and iteration % periods[op] == 0]

    @classmethod
    def for_task(cls, task: str) -> OperatorSchedule:
        """The paper's schedule for a task (unknown tasks get the HotpotQA periods)."""
        return cls(prune_every=_PRUNE_EVERY_BY_TASK.get(task, 2))
