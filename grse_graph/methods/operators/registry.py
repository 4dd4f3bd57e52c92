"""The operator seam: one callable type and the registry of the four shared operators.

An operator maps every agent's library plus the iteration's plan to new libraries and a record
per action. `evolve` looks operators up here by name instead of branching on the name, so a
method can run its own variant of an operator (for example a different prune rule) by passing
a mapping with that entry replaced.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType

from grse_graph.methods.operators.base import OperatorContext, OperatorOutput
from grse_graph.methods.operators.consolidate import consolidate
from grse_graph.methods.operators.induce import induce
from grse_graph.methods.operators.prune import prune
from grse_graph.methods.operators.refine import refine
from grse_graph.methods.plan import AggregationResult
from grse_graph.skills import SkillLibrary

Operator = Callable[
    [Mapping[str, SkillLibrary], AggregationResult, OperatorContext], Awaitable[OperatorOutput]
]
"""One evolution operator, applied to all agents' libraries at once: it gives new libraries
(every agent) and one `OperatorRecord` per action or declined action."""


async def prune_operator(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult, ctx: OperatorContext
) -> OperatorOutput:
    """`prune` (which needs no model call) as an async `Operator`."""
    return prune(libraries, aggregation, ctx)


OPERATORS: Mapping[str, Operator] = MappingProxyType(
    {
        "refine": refine,
        "consolidate": consolidate,
        "prune": prune_operator,
        "induce": induce,
    }
)
"""The shared operators by name (read-only; pass a modified copy to `evolve` to swap one)."""
