"""One SkillMAS round after execution (spec §1.2, §9.3 steps 3-8): utility learning,
retained evidence, diagnosis, skill evolution, pool evaluation and restructuring, giving the
next state X_{r+1} (tables, counters, pool, team) and the next libraries."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from grse_graph.skills import SkillLibrary

from .analyst_loop import ToolLoopAnalyst, agent_boundaries
from .diagnosis import (
    AnalystEvidence,
    ClusterAnalyst,
    Diagnosis,
    SingleCallAnalyst,
    cluster_failures,
    diagnose,
)
from .evolution import drop_observed, evaluate_pool, evolve_skills
from .restructure import Decision, apply_decision, build_artifacts, decide
from .retention import RetainedItem, retain
from .settings import SkillmasSettings
from .skills import lineage_id
from .state import RetainedLine, RoundRecord, SkillmasState, demote, round_undo
from .tables import ExecutorUtilityTable, SkillUtilityTable
from .team import TeamMember
from .trace import VerifiedTrace, by_type, success_rate
from .work import EvolutionWork, RoundEvidence


def learn_utilities(
    skills: SkillUtilityTable,
    executors: ExecutorUtilityTable,
    traces: Sequence[VerifiedTrace],
    libraries: Mapping[str, SkillLibrary],
    executor_credit: Literal["episode", "local"] = "episode",
) -> tuple[SkillUtilityTable, ExecutorUtilityTable]:
    """R = y: Q^s for every (agent, used skill), Q^a for every agent with a step. With
    `executor_credit="local"` an agent's Q^a learns its executor-local verified outcome
    (`VerifiedTrace.local`) where a verifier gave one, else the episode outcome (row 6)."""
    for trace in traces:
        reward = 1.0 if trace.success else 0.0
        for agent, names in trace.used.items():
            library = libraries.get(agent)
            for name in names:
                skill_id = (
                    lineage_id(library.get(name), agent)
                    if library is not None and library.has(name)
                    else f"{agent}/{name}"
                )
                skills = skills.update(skill_id, trace.task_type, agent, reward)
        for agent in trace.executors:
            outcome = trace.success
            if executor_credit == "local":
                outcome = trace.local.get(agent, trace.success)
            executors = executors.update(agent, trace.task_type, 1.0 if outcome else 0.0)
    return skills, executors


@dataclass(frozen=True)
class RoundOutcome:
    """The next state and libraries (by agent, including an added specialist)."""

    state: SkillmasState
    libraries: dict[str, SkillLibrary]


def round_record(iteration: int, traces: Sequence[VerifiedTrace], **fields: Any) -> RoundRecord:
    """The record of a round that executed `traces` (and did what `fields` say)."""
    by_rate = {k: success_rate(v) for k, v in sorted(by_type(traces).items())}
    return RoundRecord(
        iteration=iteration,
        episodes=len(traces),
        success_rate=success_rate(traces),
        success_by_type=by_rate,
        **fields,
    )


def measurement(
    state: SkillmasState, iteration: int, traces: Sequence[VerifiedTrace]
) -> SkillmasState:
    """The state after an execution-only round (X_{R+1} measured, nothing learned)."""
    record = round_record(iteration, traces, measurement=True)
    return state.model_copy(update={"iteration": iteration, "round": record})


async def update_round(
    state: SkillmasState,
    *,
    iteration: int,
    traces: Sequence[VerifiedTrace],
    judge_calls: int,
    sources: AnalystEvidence,
    settings: SkillmasSettings,
    library_limit: int,
    seed_roles: Mapping[str, str] | None = None,
    domain: str | None = None,
) -> RoundOutcome:
    """Round r's learning, evidence, evolution and restructuring on its executed traces.
    `sources`: the round's rollouts, gold answers, libraries and provider; `seed_roles` (agent
    -> role prompt) feeds the loop analyst's agent-boundary tool; `domain` names the task in
    the LEARN prompt."""
    s = settings
    skills_q, executors_q = learn_utilities(
        state.skills, state.executors, traces, sources.libraries, s.executor_credit
    )
    retention = retain(traces, state.failure_counts)
    retained = retention.items
    members = list(state.members)
    diagnoses = await _diagnoses(traces, retained, members, sources, s, seed_roles or {})
    work = EvolutionWork(
        libraries=dict(sources.libraries),
        status={a: dict(statuses) for a, statuses in state.status.items()},
        table=skills_q,
        parents=dict(state.parents),
        tallies=dict(state.pool_tallies),
    )
    rate = success_rate(traces)
    drop = drop_observed(state.previous_success_rate, rate)
    reverted = None
    if drop is not None and s.drop_policy == "demote" and state.undo is not None:
        members, reverted = demote(work, members, state.undo)
    evidence = RoundEvidence(
        round=iteration,
        traces=list(traces),
        retained=retained,
        diagnoses=diagnoses,
        agents=[m.name for m in members],
        final_agent=members[-1].name,
        **({"domain": domain} if domain else {}),
    )
    await evolve_skills(
        work, evidence, sources.provider, require_diagnosis=s.create_requires_diagnosis
    )
    evaluate_pool(
        work,
        traces,
        s.pool_min_uses,
        s.pool_min_success_rate,
        counting=s.pool_counting,
        disable_after=s.pool_disable_after,
    )
    decision = _restructuring(work, retained, diagnoses, executors_q, members, state, s)
    removed = work.libraries.get(decision.removed) if decision.removed else None
    removed_status = dict(work.status.get(decision.removed or "", {}))
    decision, new_members, next_libraries, executors_q = apply_decision(
        decision,
        members,
        work.libraries,
        executors_q,
        library_limit,
        work.status,  # type: ignore[arg-type]
        s.specialist_mode,
    )
    undo = None
    if s.drop_policy == "demote":
        undo = round_undo(iteration, work, members, decision, removed, removed_status)
    record = round_record(
        iteration,
        traces,
        judge_calls=judge_calls,
        retained=[_retained_line(item) for item in retained],
        diagnoses=diagnoses,
        actions=work.actions,
        pool=work.pool,
        drop=drop,
        reverted=reverted,
        restructuring=decision,
    )
    failure_mass = Counter(i.trace.task_type for i in retained if not i.trace.success)
    new_state = state.model_copy(
        update={
            "iteration": iteration,
            "skills": work.table,
            "executors": executors_q,
            "failure_counts": retention.failure_counts,
            "status": work.status,
            "members": new_members,
            "parents": work.parents,
            "previous_success_rate": rate,
            "failure_mass": dict(failure_mass),
            "repaired_types": sorted(set(work.repaired_types)),
            "pool_tallies": work.tallies,
            "undo": undo,
            "round": record,
        }
    )
    return RoundOutcome(state=new_state, libraries=next_libraries)


def _restructuring(
    work: EvolutionWork,
    retained: Sequence[RetainedItem],
    diagnoses: Sequence[Diagnosis],
    executors_q: ExecutorUtilityTable,
    members: Sequence[TeamMember],
    state: SkillmasState,
    settings: SkillmasSettings,
) -> Decision:
    """The round's one restructuring decision from its artifacts (spec §6)."""
    pending = list(dict.fromkeys([*work.new_skills, *work.promoted]))
    owned = {a: [lineage_id(sk, a) for sk in lib.skills] for a, lib in work.libraries.items()}
    handoff = {r for d in diagnoses if d.tag == "handoff-to-structure" for r in d.rollout_ids}
    artifacts = build_artifacts(
        retained, pending, owned, executors_q, handoff, [m.name for m in members]
    )
    return decide(
        artifacts,
        members,
        mode=settings.restructure,
        max_agents=settings.max_agents,
        previous_mass=state.failure_mass,
        repaired_types=state.repaired_types,
    )


def _retained_line(item: RetainedItem) -> RetainedLine:
    return RetainedLine(
        rollout_id=item.trace.rollout_id,
        task_type=item.trace.task_type,
        success=item.trace.success,
        reasons=list(item.reasons),
        priority=item.priority,
    )


async def _diagnoses(
    traces: Sequence[VerifiedTrace],
    retained: Sequence[RetainedItem],
    members: Sequence[TeamMember],
    evidence: AnalystEvidence,
    settings: SkillmasSettings,
    seed_roles: Mapping[str, str],
) -> list[Diagnosis]:
    """The round's failure clusters diagnosed, by the tool-loop analyst when `analyst` is
    ``loop``, else by one call per cluster."""
    analyst: ClusterAnalyst = (
        ToolLoopAnalyst(
            evidence,
            successes=[t for t in traces if t.success],
            agent_boundaries=agent_boundaries(members, seed_roles),
            max_tokens=settings.analyst_max_tokens,
            max_turns=settings.analyst_turns,
        )
        if settings.analyst == "loop"
        else SingleCallAnalyst(evidence, settings.analyst_max_tokens)
    )
    return await diagnose(cluster_failures(retained, traces), analyst)
