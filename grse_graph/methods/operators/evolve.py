"""evolve: run the scheduled operators over all agents' libraries for one iteration."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.operators.base import OperatorContext, OperatorSettings
from grse_graph.methods.operators.memorisation import MemorisationCheck
from grse_graph.methods.operators.registry import OPERATORS, Operator
from grse_graph.methods.operators.schedule import OPERATOR_ORDER, OperatorSchedule
from grse_graph.methods.operators.schema import EvolutionResult, OperatorRecord
from grse_graph.methods.plan import AggregationResult
from grse_graph.methods.utility import UtilityRule, bookkeeping, replace_utilities
from grse_graph.skills import SkillLibrary


async def evolve(
    libraries: Mapping[str, SkillLibrary],
    aggregation: AggregationResult,
    *,
    iteration: int,
    schedule: OperatorSchedule,
    library_limit: int | None,
    provider: ChatModelProvider,
    settings: OperatorSettings | None = None,
    order: Sequence[str] = OPERATOR_ORDER,
    operators: Mapping[str, Operator] = OPERATORS,
    utility_rule: UtilityRule = replace_utilities,
    agent_context: Mapping[str, str] | None = None,
    token_counter: Callable[[str], int] | None = None,
    task_guidance: str = "",
    memorisation: MemorisationCheck | None = None,
) -> EvolutionResult:
    """Candidate libraries for iteration `iteration` (1-based) and a record per operator action.

    The iteration's bookkeeping (`utility_rule`, invocation counts) is applied first, so the
    operators read this iteration's utilities. Operators run in `order` (default refine,
    consolidate, prune, induce) filtered by the schedule, each looked up in `operators` and
    seeing the result of the previous one. `agent_context` (agent -> its role and task) is
    shown to the optimizer with the agent's other skills; `token_counter` counts skill bodies
    for the body cap (default: the four-characters estimate); `task_guidance` (see
    `operator_guidance`) goes into every operator prompt; `memorisation` (built from the run's
    training inputs) rejects drafted bodies that copy them (None: no check).
    """
    ctx = OperatorContext(
        provider=provider,
        iteration=iteration,
        library_limit=library_limit,
        settings=settings or OperatorSettings(),
        agent_context=dict(agent_context or {}),
        token_counter=token_counter,
        task_guidance=task_guidance,
        memorisation=memorisation,
    )
    current = bookkeeping(libraries, aggregation, utility_rule)
    records: list[OperatorRecord] = []
    ranks = {name: i for i, name in enumerate(order)}
    active = sorted((op for op in schedule.active(iteration) if op in ranks), key=ranks.__getitem__)
    for name in active:
        current, new = await operators[name](current, aggregation, ctx)
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
