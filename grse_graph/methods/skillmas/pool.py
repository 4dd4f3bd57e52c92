"""The validation pool (spec §5.6, §9.2 rows 11, 18): shadow skills offered in training rounds
until their verified uses promote them (>= 3 uses and >= 0.6 success) or they wait.

Counting is per round by default (the code: uses do not accumulate); `cumulative` adds each
round's uses to the skill's `PoolTally`, which lives in the method state. With a
`disable_after` of m, the m-th failed evaluation (enough uses, rate below the threshold)
disables the skill instead of holding it again (the code declares `disable` but never emits it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from .trace import VerifiedTrace

MIN_USES = 3
MIN_SUCCESS_RATE = 0.6

Status = Literal["active", "shadow", "disabled"]
Counting = Literal["round", "cumulative"]


class PoolTally(BaseModel):
    """A waiting shadow skill's verified uses and successes over all rounds so far, and how many
    of its evaluations failed (kept in the method state; dropped when the skill leaves the pool)."""

    uses: int = 0
    successes: int = 0
    failed_evaluations: int = 0


class PoolDecision(BaseModel):
    """One shadow skill's evaluation in a round (uses/successes: the counts it was judged on)."""

    agent: str
    skill: str
    uses: int
    successes: int
    decision: Literal["promote", "hold", "disable"]
    reason: str
    failed_evaluations: int = 0

    @property
    def success_rate(self) -> float:
        return self.successes / self.uses if self.uses else 0.0


def evaluate_shadow(
    agent: str,
    skill: str,
    traces: Sequence[VerifiedTrace],
    min_uses: int = MIN_USES,
    min_success_rate: float = MIN_SUCCESS_RATE,
    *,
    counting: Counting = "round",
    tally: PoolTally | None = None,
    disable_after: int | None = None,
) -> tuple[PoolDecision, PoolTally]:
    """Promote, hold or disable one shadow skill on the traces of this round whose used skills
    (of its owner) contain it, added to `tally` when counting is cumulative. Returns the
    decision and the skill's tally after this round."""
    prior = tally or PoolTally()
    using = [t for t in traces if skill in t.used.get(agent, [])]
    now = PoolTally(
        uses=prior.uses + len(using),
        successes=prior.successes + sum(t.success for t in using),
        failed_evaluations=prior.failed_evaluations,
    )
    if counting == "cumulative":
        uses, successes = now.uses, now.successes
    else:
        uses, successes = len(using), sum(t.success for t in using)

    def decided(decision: Literal["promote", "hold", "disable"], reason: str) -> PoolDecision:
        return PoolDecision(
            agent=agent,
            skill=skill,
            uses=uses,
            successes=successes,
            decision=decision,
            reason=reason,
            failed_evaluations=now.failed_evaluations,
        )

    if uses < min_uses:
        return decided("hold", f"needs {min_uses - uses} more verified uses"), now
    rate = successes / uses
    if rate >= min_success_rate:
        return decided("promote", f"success rate {rate:.2f} >= {min_success_rate}"), now
    now = now.model_copy(update={"failed_evaluations": now.failed_evaluations + 1})
    below = f"success rate {rate:.2f} below {min_success_rate}"
    if disable_after is not None and now.failed_evaluations >= disable_after:
        return decided("disable", f"{below} ({now.failed_evaluations} failed evaluations)"), now
    return decided("hold", below), now
