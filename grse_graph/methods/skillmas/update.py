"""SkillMAS's state hooks on the shared loop: the state before round 1, the round update (or
the final measurement) and the validation score a committed round records."""

from __future__ import annotations

from collections.abc import Sequence

from grse_graph.methods.plan import AggregationResult
from grse_graph.methods.rounds import RoundUpdate, StartInputs, UpdateInputs

from .execution import fixed_subset, round_state
from .record import SkillmasRecord
from .round import measurement, update_round
from .settings import SkillmasSettings
from .skills import lineage_id
from .state import SkillmasState
from .team import seed_members
from .trace import VerifiedTrace


def start_state(inputs: StartInputs) -> SkillmasState:
    """X_0: the seed team, the fixed subset, a Q^s record per starting skill and a Q^a record
    per seed agent."""
    x0 = SkillmasState(
        members=seed_members(inputs.team),
        subset=fixed_subset(list(inputs.train), inputs.size, inputs.seed),
    )
    for agent, library in inputs.libraries.items():
        for skill in library.skills:
            x0 = x0.model_copy(update={"skills": x0.skills.initialize(lineage_id(skill, agent))})
    for agent in inputs.team.agent_names:
        x0 = x0.model_copy(update={"executors": x0.executors.initialize(agent)})
    return x0


def used_skill_counts(
    traces: Sequence[VerifiedTrace], question_ids: list[str]
) -> AggregationResult:
    """The round's plan: its used-skill counts per agent (each skill's invocation count, as
    bookkeeping); SkillMAS's edits are made by its own round update, not by the operators."""
    counts: dict[str, dict[str, int]] = {}
    for trace in traces:
        for agent, names in trace.used.items():
            for name in names:
                counts.setdefault(agent, {})
                counts[agent][name] = counts[agent].get(name, 0) + 1
    return AggregationResult(question_ids=question_ids, invocations=counts)


async def round_update(inputs: UpdateInputs, settings: SkillmasSettings) -> RoundUpdate:
    """Round r's learning, evidence, evolution and restructuring (spec §9.3 steps 3-8) on its
    verified traces, with the complete next libraries; after the last training round, the
    execution-only measurement of the final state (libraries unchanged)."""
    x = round_state(inputs.state)
    records = [r for r in inputs.records if isinstance(r, SkillmasRecord)]
    traces = [r.trace for r in records if r.trace is not None]
    plan = used_skill_counts(traces, [r.question_id for r in inputs.records])
    if inputs.iteration > inputs.iterations:
        measured = measurement(x, inputs.iteration, traces)
        return RoundUpdate(plan=plan, state=measured, libraries=dict(inputs.libraries))
    outcome = await update_round(
        x,
        iteration=inputs.iteration,
        traces=traces,
        judge_calls=sum(r.judge_calls for r in records),
        libraries=inputs.libraries,
        rollouts=dict(inputs.rollouts),
        gold={r.question_id: inputs.questions[r.question_id].answer for r in records},
        provider=inputs.provider,
        settings=settings,
        library_limit=inputs.library_limit,
        seed_roles={a.name: a.role for a in inputs.team.agents},
        domain=f"a question-answering agent team ({inputs.task.name})",
    )
    rate = outcome.state.round.success_rate if outcome.state.round else 0.0
    return RoundUpdate(plan=plan, state=outcome.state, libraries=outcome.libraries, score=rate)


def with_validation(state: SkillmasState, score: float | None) -> SkillmasState:
    """The state with its round's validation score (checkpoint=validation; None otherwise)."""
    if state.round is None:
        return state
    return state.model_copy(
        update={"round": state.round.model_copy(update={"validation_score": score})}
    )
