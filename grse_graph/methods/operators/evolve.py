"""evolve: run the scheduled operators over all agents' libraries for one iteration."""

from __future__ import annotations

from collections.abc import Mapping

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.grse.schema import AggregationResult, EvolutionResult, OperatorRecord
from grse_graph.methods.operators.base import OperatorContext, OperatorSettings
from grse_graph.methods.operators.consolidate import consolidate
from grse_graph.methods.operators.induce import induce
from grse_graph.methods.operators.prune import prune
from grse_graph.methods.operators.refine import refine
from grse_graph.methods.operators.schedule import OperatorSchedule
from grse_graph.skills import SkillLibrary


def record_utilities(
    libraries: Mapping[str, SkillLibrary], aggregation: AggregationResult
) -> dict[str, SkillLibrary]:
    """Write each credited skill's direction utility into its metadata (bookkeeping only: the
    content hash does not change), so later prune steps can use it."""
    out = dict(libraries)
    for direction in aggregation.directions:
        library = out.get(direction.agent)
        if library is None or not library.has(direction.skill_id):
            continue
        skill = library.get(direction.skill_id)
        out[direction.agent] = library.replace(skill.with_utility(direction.utility))
    return out


async def evolve(
    libraries: Mapping[str, SkillLibrary],
    aggregation: AggregationResult,
    *,
    iteration: int,
    schedule: OperatorSchedule,
    library_limit: int | None,
    provider: ChatModelProvider,
    settings: OperatorSettings | None = None,
) -> EvolutionResult:
    """Candidate libraries for iteration `iteration` (1-based) and a record per operator action.

    Operators run in `OPERATOR_ORDER` (refine, consolidate, prune, induce) filtered by the
    schedule; each sees the result of the previous one.
    """
    ctx = OperatorContext(
        provider=provider,
        iteration=iteration,
        library_limit=library_limit,
        settings=settings or OperatorSettings(),
    )
    current = record_utilities(libraries, aggregation)
    records: list[OperatorRecord] = []
    active = schedule.active(iteration)
    for op in active:
        if op == "refine":
            current, new = await refine(current, aggregation, ctx)
        elif op == "consolidate":
            current, new = await consolidate(current, aggregation, ctx)
        elif op == "prune":
            current, new = prune(current, aggregation, ctx)
        else:
            current, new = await induce(current, aggregation, ctx)
        records.extend(new)
    changed = [
        agent
        for agent, library in libraries.items()
        if current[agent].content_hash() != library.content_hash()
    ]
    return EvolutionResult(
        iteration=iteration,
        operators=active,
        candidates=current,
        records=records,
        changed_agents=changed,
    )
