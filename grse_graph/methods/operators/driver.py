"""The operator driver: the walks every operator's actions go through, once.

An operator acts on a state: for the shared four and MASkills' variants, each agent's library
on its own (`each_library`, `each_target`); for a method whose operators work across the team
(SkillMAS), the round's whole workspace. Either way it has targets, found before the first
action, and applies one action per target in turn, each on the state the previous one left,
passing over a target the state has stopped fitting. `in_turn` / `in_turn_async` are that
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

Apply = Callable[[SkillLibrary, T], Awaitable[tuple[SkillLibrary, OperatorRecord]]]
"""One action on one target, on the library as the previous actions left it."""

Applicable = Callable[[S, T], bool]
"""Whether a target still fits the state the earlier actions left."""


def in_turn(
    state: S,
    targets: Iterable[T],
    act: Callable[[S, T], tuple[S, Sequence[R]]],
    applicable: Applicable[S, T] | None = None,
) -> tuple[S, list[R]]:
    """`act` on each target in turn (for actions that call no model); a target `applicable`
    rejects is passed over without a record. Returns the last state and every record, in
    order."""
    current = state
    records: list[R] = []
    for target in targets:
        if applicable is not None and not applicable(current, target):
            continue
        current, new = act(current, target)
        records.extend(new)
    return current, records


async def in_turn_async(
    state: S,
    targets: Iterable[T],
    apply: Callable[[S, T], Awaitable[tuple[S, Sequence[R]]]],
    applicable: Applicable[S, T] | None = None,
) -> tuple[S, list[R]]:
    """`in_turn` for actions that await a model: one action after another, never two at once
    (a run's optimizer calls keep their order, so a resumed or scripted run sees the same
    sequence)."""
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
    """An operator whose action calls no model: `act` is synchronous, so `run_local` can run
    it outside an event loop, and it still runs among other rules in `run_rules`."""

    @abstractmethod
    def act(self, state: S, target: T) -> tuple[S, Sequence[R]]:
        """One action on one target."""

    async def apply(self, state: S, target: T) -> tuple[S, Sequence[R]]:
        return self.act(state, target)


async def run_rule(state: S, rule: OperatorRule[S, Any, R]) -> tuple[S, list[R]]:
    """`rule` on its targets in turn: the state after its last action and all its records."""
    return await in_turn_async(state, rule.targets(state), rule.apply, rule.applicable)


def run_local(state: S, rule: LocalRule[S, Any, R]) -> tuple[S, list[R]]:
    """`run_rule` for a model-free rule, without an event loop."""
    return in_turn(state, rule.targets(state), rule.act, rule.applicable)


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


async def apply_in_turn(
    library: SkillLibrary,
    targets: Iterable[T],
    apply: Apply[T],
    applicable: Applicable[SkillLibrary, T] | None = None,
) -> LibraryOutput:
    """`in_turn_async` on one library for actions that make exactly one record each."""

    async def one(current: SkillLibrary, target: T) -> tuple[SkillLibrary, list[OperatorRecord]]:
        after, record = await apply(current, target)
        return after, [record]

    return await in_turn_async(library, targets, one, applicable)


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
    in turn."""

    async def apply_one(library: SkillLibrary, target: T) -> tuple[SkillLibrary, OperatorRecord]:
        return await apply(library, target, aggregation, ctx)

    async def step(library: SkillLibrary) -> LibraryOutput:
        return await apply_in_turn(library, targets(library, aggregation), apply_one, applicable)

    return await each_library_async(libraries, step)
