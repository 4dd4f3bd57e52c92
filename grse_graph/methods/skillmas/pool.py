"""The validation pool (spec §5.6, §9.2 rows 11, 18): shadow skills offered in training rounds
until this round's verified uses promote them (>= 3 uses and >= 0.6 success) or they wait."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from .trace import VerifiedTrace

MIN_USES = 3
MIN_SUCCESS_RATE = 0.6

Status = Literal["active", "shadow", "disabled"]


class PoolDecision(BaseModel):
    """One shadow skill's evaluation in a round."""

    agent: str
    skill: str
    uses: int
    successes: int
    decision: Literal["promote", "hold"]
    reason: str

    @property
    def success_rate(self) -> float:
        return self.successes / self.uses if self.uses else 0.0


def evaluate_shadow(
    agent: str,
    skill: str,
    traces: Sequence[VerifiedTrace],
    min_uses: int = MIN_USES,
    min_success_rate: float = MIN_SUCCESS_RATE,
) -> PoolDecision:
    """Promote or hold one shadow skill on the traces of this round whose used skills (of its
    owner) contain it; uses do not accumulate across rounds."""
    using = [t for t in traces if skill in t.used.get(agent, [])]
    uses, successes = len(using), sum(t.success for t in using)
    if uses < min_uses:
        return PoolDecision(
            agent=agent,
            skill=skill,
            uses=uses,
            successes=successes,
            decision="hold",
            reason=f"needs {min_uses - uses} more verified uses",
        )
    rate = successes / uses
    if rate >= min_success_rate:
        return PoolDecision(
            agent=agent,
            skill=skill,
            uses=uses,
            successes=successes,
            decision="promote",
            reason=f"success rate {rate:.2f} >= {min_success_rate}",
        )
    return PoolDecision(
        agent=agent,
        skill=skill,
        uses=uses,
        successes=successes,
        decision="hold",
        reason=f"success rate {rate:.2f} below {min_success_rate}",
    )
