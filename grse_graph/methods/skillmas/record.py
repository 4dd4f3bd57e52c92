"""SkillMAS's credit record: one line of RUN/critiques.jsonl per rollout."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from grse_graph.methods.base import CreditRecord

from .trace import StepSignals, VerifiedTrace


class SkillmasRecord(CreditRecord):
    """One rollout's verified trace and the used-skill signals of each of its steps."""

    method: Literal["skillmas"] = "skillmas"
    trace: VerifiedTrace | None = None
    signals: list[StepSignals] = Field(default_factory=list)
    judge_calls: int = 0
