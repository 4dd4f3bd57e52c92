"""One SkillMAS round after execution (spec §1.2, §9.3 steps 3-8): utility learning,
retained evidence, diagnosis, skill evolution, pool evaluation and restructuring, giving the
next state X_{r+1} (tables, counters, pool, team) and the next libraries."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from grse_graph.llm.provider import ChatModelProvider
from grse_graph.skills import SkillLibrary
from grse_graph.team.rollout import Rollout

from .analyst_loop import ToolLoopAnalyst
from .diagnosis import Diagnosis, cluster_failures, diagnose
from .evolution import drop_observed, evaluate_pool, evolve_skills
from .penalty import demote, round_undo
from .restructure import Decision, build_artifacts, decide
from .retention import RetainedItem, retain
from .routing import routing_slot
from .settings import SkillmasSettings
from .skills import LINEAGE_KEY, lineage_id
from .state import RetainedLine, RoundRecord, RoundUndo, SkillmasState
from .tables import ExecutorUtilityTable, SkillUtilityTable
from .team import (
    TeamMember,
    boundary_note,
    insert_before_final,
    routed_specialist_role,
    specialist_name,
    specialist_role,
)
from .trace import VerifiedTrace
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


def agent_boundaries(
    members: Sequence[TeamMember], seed_roles: Mapping[str, str]
) -> dict[str, str]:
    """What the analyst's agent-boundary tool answers: role, task types, boundary note."""
    out = {}
    for m in members:
        role = seed_roles.get(m.name, "") if m.seed else m.role
        runs = "every question" if m.seed or not m.targets else ", ".join(m.targets)
        where = f"; routed in place of {m.slot}" if m.slot else ""
        note = f"\n{m.boundary}" if m.boundary else ""
        out[m.name] = f"role: {role or '-'}\nruns for: {runs}{where}{note}"
    return out


def success_by_type(traces: Sequence[VerifiedTrace]) -> dict[str, float]:
    out: dict[str, list[bool]] = {}
    for t in traces:
        out.setdefault(t.task_type, []).append(t.success)
    return {k: sum(v) / len(v) for k, v in sorted(out.items())}


@dataclass(frozen=True)
class RoundOutcome:
    """The next state and libraries (by agent, including an added specialist)."""

    state: SkillmasState
    libraries: dict[str, SkillLibrary]


def measurement(
    state: SkillmasState, iteration: int, traces: Sequence[VerifiedTrace]
) -> SkillmasState:
    """The state after an execution-only round (X_{R+1} measured, nothing learned)."""
    rate = sum(t.success for t in traces) / len(traces) if traces else 0.0
    record = RoundRecord(
        iteration=iteration,
        measurement=True,
        episodes=len(traces),
        success_rate=rate,
        success_by_type=success_by_type(traces),
    )
    return state.model_copy(update={"iteration": iteration, "round": record})


def apply_decision(
    decision: Decision,
    members: list[TeamMember],
    libraries: dict[str, SkillLibrary],
    executors: ExecutorUtilityTable,
    library_limit: int,
    status: dict[str, dict[str, str]],
    specialist_mode: Literal["insert", "route"] = "insert",
) -> tuple[Decision, list[TeamMember], dict[str, SkillLibrary], ExecutorUtilityTable]:
    """Apply keep/add/modify/merge (spec §6.3): "add" copies skills to a new specialist
    (inserted before the final agent, or, routed, an alternative executor for the slot of the
    lowest-utility implicated seed agent), "modify" gives one agent the pending skills and a
    boundary note, "merge" moves the removed agent's skills to the target and deletes the
    removed agent (its Q^a record stays)."""
    libraries = dict(libraries)
    evidence = decision.evidence
    tau = decision.task_type or ""
    reasons = evidence.reasons if evidence else []

    def copy_into(target: str, refs: Sequence[str]) -> list[str]:
        given = []
        for ref in refs:
            agent, _, name = ref.partition("/")
            source = libraries.get(agent)
            library = libraries[target]
            if source is None or not source.has(name) or library.has(name):
                continue
            if library.limit is not None and len(library) >= library.limit:
                break
            skill = source.get(name)
            copy = skill.model_copy(
                update={"metadata": {**skill.metadata, LINEAGE_KEY: lineage_id(skill, agent)}}
            )
            libraries[target] = library.add(copy)
            state = status.get(agent, {}).get(name, "active")
            status.setdefault(target, {})[name] = state
            given.append(ref)
        return given

    if decision.action == "add":
        name = specialist_name(tau, [m.name for m in members])
        slot = None
        if specialist_mode == "route":
            implicated = evidence.executors if evidence else []
            slot = routing_slot(members, implicated, executors, tau)
        member = TeamMember(
            name=name,
            seed=False,
            role=routed_specialist_role(tau, slot) if slot else specialist_role(tau),
            targets=[tau],
            reason=decision.reason,
            slot=slot,
        )
        if slot is None:
            members = insert_before_final(members, member)
        else:
            at = [m.name for m in members].index(slot) + 1
            members = [*members[:at], member, *members[at:]]
        libraries[name] = SkillLibrary.empty(name, library_limit)
        given = copy_into(name, decision.skills)
        executors = executors.initialize_extension(name, executors.task_baseline(tau), [tau])
        decision = decision.model_copy(
            update={
                "agent": name,
                "slot": slot,
                "skills": given,
                "team_after": [m.name for m in members],
            }
        )
    elif decision.action == "modify" and decision.agent:
        given = copy_into(decision.agent, decision.skills)
        note = boundary_note(tau, reasons)
        members = [
            m.model_copy(update={"boundary": note}) if m.name == decision.agent else m
            for m in members
        ]
        decision = decision.model_copy(update={"skills": given})
    elif decision.action == "merge" and decision.agent and decision.removed:
        removed = libraries.get(decision.removed, SkillLibrary.empty(decision.removed))
        given = copy_into(decision.agent, [f"{decision.removed}/{s}" for s in removed.names()])
        given += copy_into(decision.agent, evidence.pending if evidence else [])
        note = boundary_note(tau, reasons)
        members = [
            m.model_copy(update={"boundary": note}) if m.name == decision.agent else m
            for m in members
            if m.name != decision.removed
        ]
        libraries.pop(decision.removed, None)
        status.pop(decision.removed, None)
        decision = decision.model_copy(
            update={"skills": given, "team_after": [m.name for m in members]}
        )
    return decision, members, libraries, executors


async def update_round(
    state: SkillmasState,
    *,
    iteration: int,
    traces: Sequence[VerifiedTrace],
    judge_calls: int,
    libraries: Mapping[str, SkillLibrary],
    rollouts: Mapping[str, Rollout],
    gold: Mapping[str, str],
    provider: ChatModelProvider,
    settings: SkillmasSettings,
    library_limit: int,
    seed_roles: Mapping[str, str] | None = None,
    domain: str | None = None,
) -> RoundOutcome:
    """Round r's learning, evidence, evolution and restructuring on its executed traces.
    `seed_roles` (agent -> role prompt) feeds the loop analyst's agent-boundary tool; `domain`
    names the task in the LEARN prompt."""
    skills_q, executors_q = learn_utilities(
        state.skills, state.executors, traces, libraries, settings.executor_credit
    )
    retention = retain(traces, state.failure_counts)
    members = list(state.members)
    diagnoses = await _diagnoses(
        traces,
        retention.items,
        members=members,
        rollouts=rollouts,
        gold=gold,
        libraries=libraries,
        provider=provider,
        settings=settings,
        seed_roles=seed_roles,
    )
    work = EvolutionWork(
        libraries=dict(libraries),
        status={a: dict(s) for a, s in state.status.items()},
        table=skills_q,
        parents=dict(state.parents),
        tallies=dict(state.pool_tallies),
    )
    rate = sum(t.success for t in traces) / len(traces) if traces else 0.0
    drop = drop_observed(state.previous_success_rate, rate)
    reverted = None
    if drop is not None and settings.drop_policy == "demote" and state.undo is not None:
        members, reverted = demote(work, members, state.undo)
    evidence = RoundEvidence(
        round=iteration,
        traces=list(traces),
        retained=retention.items,
        diagnoses=diagnoses,
        agents=[m.name for m in members],
        final_agent=members[-1].name,
        **({"domain": domain} if domain else {}),
    )
    await _evolve_skills(work, evidence, traces, provider, settings)
    edit = _restructure(
        work,
        members,
        executors_q,
        diagnoses,
        retention.items,
        state=state,
        settings=settings,
        library_limit=library_limit,
        iteration=iteration,
    )
    record = RoundRecord(
        iteration=iteration,
        episodes=len(traces),
        success_rate=rate,
        success_by_type=success_by_type(traces),
        judge_calls=judge_calls,
        retained=[_retained_line(i) for i in retention.items],
        diagnoses=diagnoses,
        actions=work.actions,
        pool=work.pool,
        drop=drop,
        reverted=reverted,
        restructuring=edit.decision,
    )
    new_state = state.model_copy(
        update={
            "iteration": iteration,
            "skills": work.table,
            "executors": edit.executors,
            "failure_counts": retention.failure_counts,
            "status": work.status,
            "members": edit.members,
            "parents": work.parents,
            "previous_success_rate": rate,
            "failure_mass": _failure_mass(retention.items),
            "repaired_types": sorted(set(work.repaired_types)),
            "pool_tallies": work.tallies,
            "undo": edit.undo,
            "round": record,
        }
    )
    return RoundOutcome(state=new_state, libraries=edit.libraries)


async def _diagnoses(
    traces: Sequence[VerifiedTrace],
    retained: Sequence[RetainedItem],
    *,
    members: Sequence[TeamMember],
    rollouts: Mapping[str, Rollout],
    gold: Mapping[str, str],
    libraries: Mapping[str, SkillLibrary],
    provider: ChatModelProvider,
    settings: SkillmasSettings,
    seed_roles: Mapping[str, str] | None,
) -> list[Diagnosis]:
    clusters = cluster_failures(retained, traces)
    analyst = None
    if settings.analyst == "loop":
        analyst = ToolLoopAnalyst(
            rollouts=rollouts,
            gold=gold,
            libraries=libraries,
            provider=provider,
            successes=[t for t in traces if t.success],
            agent_boundaries=agent_boundaries(members, seed_roles or {}),
            max_tokens=settings.analyst_max_tokens,
            max_turns=settings.analyst_turns,
        )
    return await diagnose(
        clusters,
        rollouts=rollouts,
        gold=gold,
        libraries=libraries,
        provider=provider,
        max_tokens=settings.analyst_max_tokens,
        analyst=analyst,
    )


async def _evolve_skills(
    work: EvolutionWork,
    evidence: RoundEvidence,
    traces: Sequence[VerifiedTrace],
    provider: ChatModelProvider,
    settings: SkillmasSettings,
) -> None:
    await evolve_skills(
        work, evidence, provider, require_diagnosis=settings.create_requires_diagnosis
    )
    evaluate_pool(
        work,
        traces,
        settings.pool_min_uses,
        settings.pool_min_success_rate,
        counting=settings.pool_counting,
        disable_after=settings.pool_disable_after,
    )


@dataclass(frozen=True)
class _Restructured:
    decision: Decision
    members: list[TeamMember]
    libraries: dict[str, SkillLibrary]
    executors: ExecutorUtilityTable
    undo: RoundUndo | None


def _restructure(
    work: EvolutionWork,
    members: list[TeamMember],
    executors: ExecutorUtilityTable,
    diagnoses: Sequence[Diagnosis],
    retained: Sequence[RetainedItem],
    *,
    state: SkillmasState,
    settings: SkillmasSettings,
    library_limit: int,
    iteration: int,
) -> _Restructured:
    """Decide and apply the round's team edit from its artifacts (spec §6)."""
    pending = list(dict.fromkeys([*work.new_skills, *work.promoted]))
    owned = {
        agent: [lineage_id(s, agent) for s in lib.skills] for agent, lib in work.libraries.items()
    }
    handoff = {r for d in diagnoses if d.tag == "handoff-to-structure" for r in d.rollout_ids}
    artifacts = build_artifacts(
        retained, pending, owned, executors, handoff, [m.name for m in members]
    )
    decision = decide(
        artifacts,
        members,
        mode=settings.restructure,
        max_agents=settings.max_agents,
        previous_mass=state.failure_mass,
        repaired_types=state.repaired_types,
    )
    members_before = list(members)
    removed = work.libraries.get(decision.removed) if decision.removed else None
    removed_status = dict(work.status.get(decision.removed or "", {}))
    decision, members, next_libraries, executors = apply_decision(
        decision,
        members,
        work.libraries,
        executors,
        library_limit,
        work.status,  # type: ignore[arg-type]
        settings.specialist_mode,
    )
    undo = None
    if settings.drop_policy == "demote":
        undo = round_undo(iteration, work, members_before, decision, removed, removed_status)
    return _Restructured(decision, members, next_libraries, executors, undo)


def _retained_line(item: RetainedItem) -> RetainedLine:
    return RetainedLine(
        rollout_id=item.trace.rollout_id,
        task_type=item.trace.task_type,
        success=item.trace.success,
        reasons=list(item.reasons),
        priority=item.priority,
    )


def _failure_mass(retained: Sequence[RetainedItem]) -> dict[str, int]:
    """Retained failures per task type (the next round's `previous_mass`)."""
    mass: dict[str, int] = {}
    for item in retained:
        if not item.trace.success:
            mass[item.trace.task_type] = mass.get(item.trace.task_type, 0) + 1
    return mass
