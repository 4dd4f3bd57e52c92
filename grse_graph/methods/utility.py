"""Utility-update rules: how an iteration's plan changes each skill's recorded utility.

The recorded utility is bookkeeping in the skill's metadata (it never changes the content hash)
that later prune steps read. A method chooses its rule (`CreditMethod.utility_rule`); the loop
applies it once per iteration to the base libraries (kept whether or not a candidate is
accepted) and `evolve` applies it before the operators run, so both see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from grse_graph.methods.plan import AggregationResult, EditDirection
from grse_graph.skills import SkillLibrary


class UtilityRule(Protocol):
    """How a plan changes the recorded utilities (bookkeeping: content hashes do not change)."""

    def __call__(
        self, libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult
    ) -> dict[str, SkillLibrary]:
        """Every agent's library with the credited skills' utilities updated."""
        ...


def bookkeeping(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, rule: UtilityRule
) -> dict[str, SkillLibrary]:
    """The iteration's bookkeeping: invocation counts added (`aggregation.invocations`), then
    the method's utility rule applied."""
    out = dict(libraries)
    for agent, counts in aggregation.invocations.items():
        library = out.get(agent)
        if library is None:
            continue
        for name, count in counts.items():
            if count and library.has(name):
                skill = library.get(name)
                library = library.replace(skill.with_invocations(skill.invocations + count))
        out[agent] = library
    return rule(out, aggregation)


def replace_utilities(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult
) -> dict[str, SkillLibrary]:
    """GRSE's rule: a credited skill's utility becomes its direction's aggregated utility;
    uncredited skills keep theirs."""
    return credited_utilities(libraries, aggregation, lambda _old, direction: direction.utility)


def credited_utilities(
    libraries: Mapping[str, SkillLibrary],
    aggregation: AggregationResult,
    new_utility: Callable[[float | None, EditDirection], float],
) -> dict[str, SkillLibrary]:
    """Every credited skill still in its library with the utility `new_utility` gives it from
    its recorded one and its direction; uncredited skills keep theirs."""
    out = dict(libraries)
    for direction in aggregation.directions:
        library = out.get(direction.agent)
        if library is None or not library.has(direction.skill_id):
            continue
        skill = library.get(direction.skill_id)
        out[direction.agent] = library.replace(
            skill.with_utility(new_utility(skill.utility, direction))
        )
    return out


class MovingAverageUtilities:
    """An exponential moving average: u <- keep * u + (1 - keep) * m.

    m is the mean of the iteration's credit utilities for the skill (`credit_utility_mean`,
    falling back to the direction's utility when a method does not record it). A skill with no
    credit this iteration keeps its utility; a skill without a recorded utility (for example
    one induced last iteration) starts from 0. MASkills uses keep = 0.6, rounded to 4 places.
    """

    def __init__(self, keep: float = 0.6) -> None:
        if not 0.0 <= keep <= 1.0:
            raise ValueError(f"moving-average keep must be in [0, 1], got {keep}")
        self.keep = keep

    def updated(self, old: float | None, direction: EditDirection) -> float:
        """The new utility of one credited skill."""
        mean = direction.credit_utility_mean
        if mean is None:
            mean = direction.utility
        value = self.keep * (old if old is not None else 0.0) + (1.0 - self.keep) * mean
        return max(-1.0, min(1.0, round(value, 4)))

    def __call__(
        self, libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult
    ) -> dict[str, SkillLibrary]:
        return credited_utilities(libraries, aggregation, self.updated)
