"""The per-agent operator driver: an operator acts on each agent's library on its own.

Every operator (the shared four and a method's variants) maps all libraries to new ones by
running one step per library, in library order, and collecting that step's records; inside a
library, most steps apply one action per target in turn, each on the library the previous one
left. Both walks live here once, so an operator only says what its step does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TypeVar

from grse_graph.methods.operators.base import OperatorContext, OperatorOutput
from grse_graph.methods.operators.schema import OperatorRecord
from grse_graph.methods.plan import AggregationResult
from grse_graph.skills import SkillLibrary

T = TypeVar("T")

LibraryOutput = tuple[SkillLibrary, list[OperatorRecord]]
"""One library after a step, and the records of that step's actions."""

Apply = Callable[[SkillLibrary, T], Awaitable[tuple[SkillLibrary, OperatorRecord]]]
"""One action on one target, on the library as the previous actions left it."""


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
    applicable: Callable[[SkillLibrary, T], bool] | None = None,
) -> LibraryOutput:
    """`apply` to each target in turn; a target the library has stopped fitting (an earlier
    action removed what it names: `applicable` False) is passed over without a record."""
    current = library
    records: list[OperatorRecord] = []
    for target in targets:
        if applicable is not None and not applicable(current, target):
            continue
        current, record = await apply(current, target)
        records.append(record)
    return current, records


async def each_target(
    libraries: Mapping[str, SkillLibrary],
    aggregation: AggregationResult,
    ctx: OperatorContext,
    targets: Callable[[SkillLibrary, AggregationResult], Iterable[T]],
    apply: Callable[
        [SkillLibrary, T, AggregationResult, OperatorContext],
        Awaitable[tuple[SkillLibrary, OperatorRecord]],
    ],
    applicable: Callable[[SkillLibrary, T], bool] | None = None,
) -> OperatorOutput:
    """Every agent's library with `apply` run on each of its `targets` (both given the plan)
    in turn."""

    async def apply_one(library: SkillLibrary, target: T) -> tuple[SkillLibrary, OperatorRecord]:
        return await apply(library, target, aggregation, ctx)

    async def step(library: SkillLibrary) -> LibraryOutput:
        return await apply_in_turn(library, targets(library, aggregation), apply_one, applicable)

    return await each_library_async(libraries, step)
