"""MASkills' credit record: one line of RUN/critiques.jsonl per training trajectory."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

from grse_graph.methods.base import CreditRecord
from grse_graph.methods.maskills.schema import TrajectoryCredit
from grse_graph.methods.maskills.trace import SkillTrace


class MaskillsRecord(CreditRecord):
    """The credit of one trajectory (one rollout of one question).

    `trace` is the skill trace xi, kept even when the critic call failed (`error` set, `result`
    None): the trajectory's reward still makes it a hard case and its trace still counts as
    invocations, as in the reference.
    """

    method: Literal["maskills"] = "maskills"
    trace: SkillTrace = SkillTrace()
    result: TrajectoryCredit | None = None

    @model_validator(mode="after")
    def _one_trajectory(self) -> MaskillsRecord:
        if len(self.rollout_ids) != 1 or len(self.rewards) != 1:
            raise ValueError(
                f"a MASkills record holds one trajectory, got {len(self.rollout_ids)} rollout "
                f"id(s) and {len(self.rewards)} reward(s)"
            )
        return self

    @property
    def reward(self) -> float:
        """The trajectory's reward."""
        return self.rewards[0]
