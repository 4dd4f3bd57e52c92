"""Group-relative advantages (GUIDE §3): rewards normalised inside one question's group."""

from __future__ import annotations

import math
from collections.abc import Sequence

DEFAULT_EPS = 1e-6


def group_advantages(rewards: Sequence[float], eps: float = DEFAULT_EPS) -> list[float]:
    """A_j = (r_j - mean) / (sigma + eps), with sigma the population std (divide by G).

    When sigma <= eps (all rewards equal, including G = 1) every advantage is 0.0: the group
    carries no relative signal, but it is still returned so the caller can keep it.
    """
    if not rewards:
        raise ValueError("group_advantages needs at least one reward")
    g = len(rewards)
    mean = sum(rewards) / g
    sigma = math.sqrt(sum((r - mean) ** 2 for r in rewards) / g)
    if sigma <= eps:
        return [0.0] * g
    return [(r - mean) / (sigma + eps) for r in rewards]


def keep_group(rewards: Sequence[float], dapo_filter: bool, eps: float = DEFAULT_EPS) -> bool:
    """Whether a group goes to the critic.

    Equal-reward groups are kept by default (they still show consistent behaviour); the DAPO
    filter variant drops them. A single-rollout group (G = 1) has equal rewards trivially, so the
    filter would drop every group; it is kept then, because G = 1 has no other signal.
    """
    if not rewards:
        raise ValueError("keep_group needs at least one reward")
    if not dapo_filter or len(rewards) == 1:
        return True
    mean = sum(rewards) / len(rewards)
    sigma = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    return sigma > eps
