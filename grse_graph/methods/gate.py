"""The per-agent validation gate (GUIDE §3).

The training loop scores libraries (S(K) = mean reward over V x H); this module only decides:
a candidate for agent i is accepted if s_i >= b_t - delta, and the accepted candidates are
assembled into the next libraries after every agent has been tested. Each decision also
carries the paired difference s_i - b_t with its standard error over validation questions
(base and candidate run on the same (question, repeat) seeds), so a report can tell a real
change from sampling noise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pydantic import BaseModel

from grse_graph.skills import SkillLibrary

DEFAULT_DELTA = 0.02
# Scores are means of float rewards; s_i == b_t - delta must not fail on rounding noise.
_SCORE_TOL = 1e-9


class PairedDifference(BaseModel):
    """Mean over questions of (candidate - base) per-question scores, and its standard error
    (sample standard deviation / sqrt(n); 0 for a single question)."""

    difference: float
    standard_error: float
    questions: int

    @classmethod
    def of(cls, base: Sequence[float], candidate: Sequence[float]) -> PairedDifference:
        """The paired difference of two per-question score lists in the same question order."""
        if len(base) != len(candidate) or not base:
            raise ValueError("paired scores need the same, non-zero number of questions")
        diffs = [c - b for b, c in zip(base, candidate, strict=True)]
        n = len(diffs)
        mean = sum(diffs) / n
        if n == 1:
            return cls(difference=mean, standard_error=0.0, questions=1)
        variance = sum((d - mean) ** 2 for d in diffs) / (n - 1)
        return cls(difference=mean, standard_error=math.sqrt(variance / n), questions=n)


class GateDecision(BaseModel):
    """The validation gate's decision for one agent's candidate library.

    `difference` / `standard_error`: the paired s_i - b_t and its standard error (None in
    records written before they were measured)."""

    agent: str
    base_score: float
    candidate_score: float
    delta: float
    accepted: bool
    difference: float | None = None
    standard_error: float | None = None


def decide(
    base_score: float,
    candidate_scores: Mapping[str, float],
    delta: float = DEFAULT_DELTA,
    differences: Mapping[str, PairedDifference] | None = None,
) -> list[GateDecision]:
    """One decision per candidate agent (in the mapping's order): accept if s_i >= b_t - delta.
    `differences` (per agent) are recorded with the decisions; they do not change them."""
    if delta < 0:
        raise ValueError(f"gate delta must be >= 0, got {delta}")
    paired = differences or {}
    return [
        GateDecision(
            agent=agent,
            base_score=base_score,
            candidate_score=score,
            delta=delta,
            accepted=score >= base_score - delta - _SCORE_TOL,
            difference=paired[agent].difference if agent in paired else None,
            standard_error=paired[agent].standard_error if agent in paired else None,
        )
        for agent, score in candidate_scores.items()
    ]


def assemble(
    current: Mapping[str, SkillLibrary],
    candidates: Mapping[str, SkillLibrary],
    decisions: list[GateDecision],
) -> dict[str, SkillLibrary]:
    """The next libraries: the current ones with every accepted candidate swapped in.

    Agents without a decision keep their current library. A decision for an agent that has no
    candidate, or that is not in the team, is a programming error and raises.
    """
    out = dict(current)
    for decision in decisions:
        if decision.agent not in current:
            raise ValueError(f"gate decision for unknown agent '{decision.agent}'")
        if decision.agent not in candidates:
            raise ValueError(f"gate decision for agent '{decision.agent}' without a candidate")
        if decision.accepted:
            out[decision.agent] = candidates[decision.agent]
    return out
