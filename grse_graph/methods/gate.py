"""The per-agent validation gate (GUIDE §3).

The training loop scores libraries (S(K) = mean reward over V x H); this module only decides:
a candidate for agent i is accepted if s_i >= b_t - delta, and the accepted candidates are
assembled into the next libraries after every agent has been tested.
"""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.methods.grse.schema import GateDecision
from grse_graph.skills import SkillLibrary

DEFAULT_DELTA = 0.02
# Scores are means of float rewards; s_i == b_t - delta must not fail on rounding noise.
_SCORE_TOL = 1e-9

__all__ = ["DEFAULT_DELTA", "GateDecision", "assemble", "decide"]


def decide(
    base_score: float, candidate_scores: Mapping[str, float], delta: float = DEFAULT_DELTA
) -> list[GateDecision]:
    """One decision per candidate agent (in the mapping's order): accept if s_i >= b_t - delta."""
    if delta < 0:
        raise ValueError(f"gate delta must be >= 0, got {delta}")
    return [
        GateDecision(
            agent=agent,
            base_score=base_score,
            candidate_score=score,
            delta=delta,
            accepted=score >= base_score - delta - _SCORE_TOL,
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
