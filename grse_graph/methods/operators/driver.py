"""The operator driver: the walks every operator's actions go through, once.

An operator acts on a state: for the shared four and MASkills' variants, each agent's library
on its own (`each_library`, `each_target`); for a method whose operators work across the team
(SkillMAS), the round's whole workspace. Either way it has targets, found before the first
action, and applies one action per target in turn, each on the state the previous one left,
passing over a target the state has stopped fitting. `in_turn` is that
walk; `OperatorRule` names its hooks, so a method states what its operator does differently
(its targets, when one still applies, the action) and the driver does the rest.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from grse_graph.methods.operators.base import OperatorContext, OperatorOutput
from grse_graph.methods.operators.schema import OperatorRecord
from grse_graph.methods.plan import AggregationResult
from grse_graph.skills import SkillLibrary

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")

LibraryOutput = tuple[SkillLibrary, list[OperatorRecord]]
"""One library after a step, and the records of that step's actions."""

Applicable = Callable[[S, T], bool]
"""Whether a target still fits the state the earlier actions left."""


async def in_turn(
    state: S,
    targets: Iterable[T],
    apply: Callable[[S, T], Awaitable[tuple[S, Sequence[R]]]],
    applicable: Applicable[S, T] | None = None,
) -> tuple[S, list[R]]:
    """Each target in turn, one action after another, never two at once (a run's optimizer
    calls keep their order, so a resumed or scripted run sees the same sequence); a target
    `applicable` rejects is passed over without a record. Returns the last state and every
    record, in order."""
    current = state
    records: list[R] = []
    for target in targets:
        if applicable is not None and not applicable(current, target):
            continue
        current, new = await apply(current, target)
        records.extend(new)
    return current, records


class OperatorRule(ABC, Generic[S, T, R]):
    """One operator as hooks over a state `S`: its targets `T`, whether a target still
    applies, and the action on one target, which gives the next state and its records `R`
    (none when it quietly passes a target over, several when one target takes more than one
    action). `run_rule` walks them in turn."""

    @abstractmethod
    def targets(self, state: S) -> Iterable[T]:
        """What the operator acts on, in order; read once, before the first action."""

    def applicable(self, state: S, target: T) -> bool:
        """Whether `target` still fits `state` as the earlier actions left it. Default: every
        target applies (an operator whose targets cannot go stale needs no check)."""
        return True

    @abstractmethod
    async def apply(self, state: S, target: T) -> tuple[S, Sequence[R]]:
        """One action on one target."""


class LocalRule(OperatorRule[S, T, R]):
    """An operator whose action calls no model: `act` is synchronous."""

    @abstractmethod
    def act(self, state: S, target: T) -> tuple[S, Sequence[R]]:
        """One action on one target."""

    async def apply(self, state: S, target: T) -> tuple[S, Sequence[R]]:
        return self.act(state, target)


async def run_rule(state: S, rule: OperatorRule[S, Any, R]) -> tuple[S, list[R]]:
    """`rule` on its targets in turn: the state after its last action and all its records."""
    return await in_turn(state, rule.targets(state), rule.apply, rule.applicable)


async def run_rules(state: S, rules: Iterable[OperatorRule[S, Any, R]]) -> tuple[S, list[R]]:
    """Each rule in order, each on the state the previous one left; the records in order."""
    records: list[R] = []
    for rule in rules:
        state, new = await run_rule(state, rule)
        records.extend(new)
    return state, records


def _collect(
    libraries: Mapping[str, SkillLibrary], outputs: Iterable[tuple[str, LibraryOutput]]
) -> OperatorOutput:
    out = dict(libraries)
    records: list[OperatorRecord] = []
    for agent, (library, new) in outputs:
        out[agent] = library
        records.extend(new)
    return out, records


def each_library(
    libraries: Mapping[str, SkillLibrary], step: Callable[[SkillLibrary], LibraryOutput]
) -> OperatorOutput:
    """Every agent's library through `step` (for steps that call no model)."""
    return _collect(libraries, ((agent, step(library)) for agent, library in libraries.items()))


async def each_library_async(
    libraries: Mapping[str, SkillLibrary],
    step: Callable[[SkillLibrary], Awaitable[LibraryOutput]],
) -> OperatorOutput:
    """Every agent's library through `step`, one agent after another (the optimizer calls
    of a run stay in library order, so a resumed or scripted run sees the same sequence)."""
    return _collect(
        libraries, [(agent, await step(library)) for agent, library in libraries.items()]
    )


async def each_target(
    libraries: Mapping[str, SkillLibrary],
    aggregation: AggregationResult,
    ctx: OperatorContext,
    targets: Callable[[SkillLibrary, AggregationResult], Iterable[T]],
    apply: Callable[
        [SkillLibrary, T, AggregationResult, OperatorContext],
        Awaitable[tuple[SkillLibrary, OperatorRecord]],
    ],
    applicable: Applicable[SkillLibrary, T] | None = None,
) -> OperatorOutput:
    """Every agent's library with `apply` run on each of its `targets` (both given the plan)
    in turn, one record per action."""

    async def apply_one(
        library: SkillLibrary, target: T
    ) -> tuple[SkillLibrary, list[OperatorRecord]]:
        after, record = await apply(library, target, aggregation, ctx)
        return after, [record]

    async def step(library: SkillLibrary) -> LibraryOutput:
        return await in_turn(library, targets(library, aggregation), apply_one, applicable)

    return await each_library_async(libraries, step)
