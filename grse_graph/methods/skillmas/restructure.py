"""MAS restructuring (spec §6, §9.2 rows 19-21): at most one decision per round among keep,
add a specialist, merge/remove, modify responsibilities, from diagnostic artifacts per task type.

`mode="code"` is the reference code's rule (which adds a specialist in round 1 whenever a task
type has two retained failures); `mode="guarded"` (default) adds the three guards of row 20:
seed agents are never removed, the team has at most `max_agents` agents, and "add" needs
structural evidence (a retained failure tagged handoff-to-structure, or a failure mass >= 2 in
two consecutive rounds with a skill repair for that task type accepted in between).
`apply_decision` makes the edit (§6.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Literal

from pydantic import BaseModel, Field

from grse_graph.skills import SkillLibrary

from .retention import RetainedItem
from .skills import LINEAGE_KEY, jaccard, lineage_id
from .tables import ExecutorUtilityTable
from .team import (
    TeamMember,
    boundary_note,
    insert_before_final,
    routed_specialist_role,
    routing_slot,
    specialist_name,
    specialist_role,
)

MIN_FAILURE_MASS = 2
LOW_UTILITY = 0.45
OVERLAP_THRESHOLD = 0.5
MAX_AGENTS = 4

RestructureMode = Literal["guarded", "code"]
ActionName = Literal["keep", "add", "merge", "modify"]


class Artifact(BaseModel):
    """F_r for one task type: retained failure mass, who and which skills were involved."""

    task_type: str
    failures: int
    successes: int
    executors: list[str]
    skills: list[str] = Field(description="used skills as agent/name, first-seen order")
    utilities: dict[str, float]
    overlap: float
    pending: list[str] = Field(description="pending skills (agent/name) used in this round")
    reasons: list[str]
    handoff_failures: int = 0


class Decision(BaseModel):
    """The round's restructuring decision with its evidence and the team before and after."""

    action: ActionName
    task_type: str | None = None
    agent: str | None = Field(default=None, description="added, modified or merge target")
    removed: str | None = None
    slot: str | None = Field(default=None, description="routed specialist: the slot it serves")
    skills: list[str] = Field(default_factory=list, description="skills given (agent/name)")
    reason: str
    guard: str | None = Field(default=None, description="what a guard changed, if anything")
    evidence: Artifact | None = None
    team_before: list[str] = Field(default_factory=list)
    team_after: list[str] = Field(default_factory=list)


def _unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def build_artifacts(
    retained: Sequence[RetainedItem],
    pending: Sequence[str],
    owned: Mapping[str, Sequence[str]],
    executors_q: ExecutorUtilityTable,
    handoff_rollouts: set[str],
    team: Sequence[str] | None = None,
) -> list[Artifact]:
    """One artifact per task type of the retained evidence, sorted by failures (stable).
    `owned` maps agents to their owned skill lineage ids (for the overlap); `handoff_rollouts`
    are retained failures whose cluster was tagged handoff-to-structure; `team`, when given,
    limits the implicated executors to its agents (an agent a demotion removed this round
    executed some traces but can no longer be edited)."""
    by_type: dict[str, list[RetainedItem]] = {}
    for item in retained:
        by_type.setdefault(item.trace.task_type, []).append(item)
    artifacts = []
    for tau, items in by_type.items():
        executors = _unique(
            [a for i in items for a in i.trace.executors if team is None or a in team]
        )
        skills = _unique(
            [f"{a}/{s}" for i in items for a, names in i.trace.used.items() for s in names]
        )
        with_skills = [a for a in executors if owned.get(a)]
        overlap = max(
            (jaccard(set(owned[a]), set(owned[b])) for a, b in combinations(with_skills, 2)),
            default=0.0,
        )
        artifacts.append(
            Artifact(
                task_type=tau,
                failures=sum(not i.trace.success for i in items),
                successes=sum(i.trace.success for i in items),
                executors=executors,
                skills=skills,
                utilities={a: executors_q.value(a, tau) for a in executors},
                overlap=overlap,
                pending=[p for p in pending if p in skills],
                reasons=sorted({r for i in items for r in i.reasons}),
                handoff_failures=sum(
                    (not i.trace.success) and i.trace.rollout_id in handoff_rollouts for i in items
                ),
            )
        )
    artifacts.sort(key=lambda a: -a.failures)
    return artifacts


def decide(
    artifacts: Sequence[Artifact],
    members: Sequence[TeamMember],
    *,
    mode: RestructureMode = "guarded",
    max_agents: int = MAX_AGENTS,
    previous_mass: Mapping[str, int] | None = None,
    repaired_types: Sequence[str] = (),
) -> Decision:
    """The one decision of the round (the largest retained failure mass decides)."""
    names = [m.name for m in members]
    candidates = [a for a in artifacts if a.failures >= MIN_FAILURE_MASS]
    if not candidates:
        return Decision(
            action="keep",
            reason="no task type with retained failure mass >= 2",
            team_before=names,
            team_after=names,
        )
    art = candidates[0]
    seeds = {m.name for m in members if m.seed}
    guard_note: str | None = None  # what the seed guard changed about merge, if anything

    def result(guard: str | None = None, **fields: Any) -> Decision:
        notes = "; ".join(n for n in (guard_note, guard) if n) or None
        return Decision(
            task_type=art.task_type, evidence=art, team_before=names, guard=notes, **fields
        )

    # merge / remove
    if art.overlap >= OVERLAP_THRESHOLD and len(art.executors) >= 2:
        ranked = sorted(art.executors, key=lambda a: -art.utilities.get(a, 0.5))
        target, removed = ranked[0], ranked[-1]
        if mode == "guarded" and removed in seeds:
            specialists = [a for a in ranked if a not in seeds]
            if specialists:
                removed = specialists[-1]
                target = next(a for a in ranked if a != removed)
                guard_note = f"seed agent {ranked[-1]} protected; removed specialist {removed}"
            else:
                removed = ""
                guard_note = f"seed agent {ranked[-1]} protected; merge skipped"
        if removed:
            return result(
                action="merge",
                agent=target,
                removed=removed,
                reason=f"owned-skill overlap {art.overlap:.2f} >= {OVERLAP_THRESHOLD}",
                team_after=[n for n in names if n != removed],
            )
    # modify
    low = [a for a in art.executors if art.utilities.get(a, 0.5) < LOW_UTILITY]
    if low and art.pending:
        return result(
            action="modify",
            agent=low[0],
            skills=list(art.pending),
            reason=(
                f"{low[0]} utility {art.utilities[low[0]]:.2f} < {LOW_UTILITY} with pending "
                f"skills {', '.join(art.pending)}"
            ),
            team_after=names,
        )
    # add
    reason = f"{art.failures} retained failures of {art.task_type}; no merge or modify applies"
    if mode == "guarded":
        if len(members) >= max_agents:
            return result(
                action="keep",
                reason=reason,
                guard=f"team already has {len(members)} agents (at most {max_agents})",
                team_after=names,
            )
        previous = (previous_mass or {}).get(art.task_type, 0)
        persistent = previous >= MIN_FAILURE_MASS and art.task_type in repaired_types
        if art.handoff_failures == 0 and not persistent:
            return result(
                action="keep",
                reason=reason,
                guard=(
                    "no structural evidence: no failure tagged handoff-to-structure and no "
                    "failure mass >= 2 in two rounds with a skill repair in between"
                ),
                team_after=names,
            )
        reason += (
            f"; structural evidence: {art.handoff_failures} handoff-to-structure failures"
            if art.handoff_failures
            else "; structural evidence: failures persist after a skill repair"
        )
    return result(
        action="add",
        skills=_unique([*art.skills, *art.pending]),
        reason=reason,
        team_after=names,  # filled with the new agent by the apply step
    )


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
