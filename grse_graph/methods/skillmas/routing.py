"""Executor routing by Executor Utility (spec §2.3 `selectAgent`, §9.2 row 19 B).

With routed specialists, each seed agent's slot has candidates: the seed agent plus the
specialists whose `slot` is that agent. `route_probabilities` is the code's softmax over
Q^a(a, tau) with temperature max(0.01, T), candidates sorted by probability (stable). Training
rounds sample from it (seeded per rollout, so a rerun routes the same way); otherwise the most
probable candidate runs.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from .tables import ExecutorUtilityTable
from .team import TeamMember

ROUTE_TEMPERATURE = 0.5
MIN_TEMPERATURE = 0.01


def route_probabilities(
    table: ExecutorUtilityTable,
    candidates: Sequence[str],
    task_type: str,
    temperature: float = ROUTE_TEMPERATURE,
) -> list[tuple[str, float]]:
    """softmax(Q^a(a, tau) / T) over the candidates, most probable first (ties keep order)."""
    if len(candidates) == 1:
        return [(candidates[0], 1.0)]
    t = max(MIN_TEMPERATURE, temperature)
    values = [table.value(a, task_type) / t for a in candidates]
    top = max(values)
    weights = [math.exp(v - top) for v in values]
    total = sum(weights)
    pairs = [(a, w / total) for a, w in zip(candidates, weights, strict=True)]
    return sorted(pairs, key=lambda pair: -pair[1])


def route(
    members: Sequence[TeamMember],
    table: ExecutorUtilityTable,
    task_type: str,
    temperature: float = ROUTE_TEMPERATURE,
    rng: random.Random | None = None,
) -> dict[str, str]:
    """slot -> the candidate that runs it, for every slot that has routed specialists: sampled
    with `rng` (training), the most probable one without (validation, test)."""
    chosen: dict[str, str] = {}
    for member in members:
        alternatives = [m.name for m in members if m.slot == member.name]
        if member.slot is not None or not alternatives:
            continue
        ranked = route_probabilities(table, [member.name, *alternatives], task_type, temperature)
        if rng is None:
            chosen[member.name] = ranked[0][0]
            continue
        draw, acc = rng.random(), 0.0
        chosen[member.name] = ranked[-1][0]
        for name, p in ranked:
            acc += p
            if draw < acc:
                chosen[member.name] = name
                break
    return chosen


def routing_slot(
    members: Sequence[TeamMember],
    implicated: Sequence[str],
    table: ExecutorUtilityTable,
    task_type: str,
) -> str:
    """The seed slot a new routed specialist competes for: the implicated seed agent with the
    lowest Q^a(a, tau) (all seeds when none is implicated); ties go to the later agent, as the
    code's stable sort makes the last-listed executor the lowest."""
    seeds = [m.name for m in members if m.seed]
    pool = [a for a in seeds if a in implicated] or seeds
    order = {name: i for i, name in enumerate(seeds)}
    return min(pool, key=lambda a: (table.value(a, task_type), -order[a]))
