"""SkillMAS's method state across rounds (spec §1.1, §9.2 row 28), one `SkillmasState` per
round in RUN/method_state.jsonl: both utility tables (with their update counters), the
retainer's failure counts, every skill's pool status, the team, the previous success rate and
the round's record. A resumed run reads the latest one back, so nothing is recomputed.

The penalty after a round-level drop (§5.5, row 17): the code only flags a drop (previous
success rate - this one > 0.02). `drop_policy=demote` acts on it: the skills promoted in the
previous round go back to the pool (shadow), the parents their promotion disabled come back,
and the previous round's restructuring edit is reverted (an added specialist leaves, a modified
agent loses the skills it was given and its boundary note, a merged-away agent comes back with
its library). What that takes is kept as the state's `RoundUndo`, so a resumed run reverts
exactly what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from grse_graph.errors import SkillError
from grse_graph.skills import SkillLibrary

from .diagnosis import Diagnosis
from .restructure import Decision
from .skills import ParkedSkill
from .tables import ExecutorUtilityTable, SkillUtilityTable
from .team import TeamMember
from .work import EvolutionAction, EvolutionWork, PoolDecision, PoolTally, Status


class RetainedLine(BaseModel):
    """One retained trace as the round record keeps it."""

    rollout_id: str
    task_type: str
    success: bool
    reasons: list[str]
    priority: float


class RoundRecord(BaseModel):
    """What one round did: outcome, retained evidence, diagnoses, skill actions, pool
    decisions, drop flag and the restructuring decision."""

    iteration: int
    measurement: bool = False
    episodes: int
    success_rate: float
    success_by_type: dict[str, float] = Field(default_factory=dict)
    validation_score: float | None = Field(
        default=None, description="mean validation reward of X_r (checkpoint=validation only)"
    )
    judge_calls: int = 0
    retained: list[RetainedLine] = Field(default_factory=list)
    diagnoses: list[Diagnosis] = Field(default_factory=list)
    actions: list[EvolutionAction] = Field(default_factory=list)
    pool: list[PoolDecision] = Field(default_factory=list)
    drop: float | None = None
    reverted: Decision | None = Field(
        default=None, description="the previous round's edit undone by drop_policy=demote"
    )
    restructuring: Decision | None = None


class RoundUndo(BaseModel):
    """What undoing one round's promotions and restructuring edit takes (drop_policy=demote):
    the skills it promoted, the parents those promotions disabled, the team before its edit and,
    for a merge, the removed agent's library."""

    round: int
    promoted: list[str] = Field(default_factory=list, description="agent/name")
    parked_parents: list[ParkedSkill] = Field(default_factory=list)
    edit: Decision | None = None
    members_before: list[TeamMember] = Field(default_factory=list)
    removed_library: list[ParkedSkill] = Field(default_factory=list)


class SkillmasState(BaseModel):
    """X_r without the libraries (those are the run folder's libraries/iter_r)."""

    iteration: int = 0
    skills: SkillUtilityTable = Field(default_factory=SkillUtilityTable)
    executors: ExecutorUtilityTable = Field(default_factory=ExecutorUtilityTable)
    failure_counts: dict[str, int] = Field(default_factory=dict)
    status: dict[str, dict[str, Status]] = Field(default_factory=dict)
    members: list[TeamMember] = Field(default_factory=list)
    parents: dict[str, str] = Field(default_factory=dict)
    subset: list[str] = Field(default_factory=list, description="the fixed train subset")
    previous_success_rate: float | None = None
    failure_mass: dict[str, int] = Field(default_factory=dict)
    repaired_types: list[str] = Field(default_factory=list)
    pool_tallies: dict[str, PoolTally] = Field(
        default_factory=dict, description="agent/name -> a waiting shadow skill's tally"
    )
    undo: RoundUndo | None = Field(
        default=None, description="how to revert the last round (drop_policy=demote only)"
    )
    round: RoundRecord | None = None

    def status_of(self, agent: str, skill: str) -> Status:
        return self.status.get(agent, {}).get(skill, "active")


def round_undo(
    iteration: int,
    work: EvolutionWork,
    members_before: Sequence[TeamMember],
    decision: Decision,
    removed_library: SkillLibrary | None,
    removed_status: Mapping[str, str],
) -> RoundUndo:
    """What reverting this round would take (its promotions and its restructuring edit)."""
    parked = []
    if removed_library is not None:
        agent = removed_library.agent
        parked = [
            ParkedSkill.of(agent, s, removed_status.get(s.name, "active"))
            for s in removed_library.skills
        ]
    return RoundUndo(
        round=iteration,
        promoted=list(work.promoted),
        parked_parents=list(work.parked),
        edit=decision if decision.action != "keep" else None,
        members_before=list(members_before),
        removed_library=parked,
    )


def _put_back(work: EvolutionWork, parked: ParkedSkill, why: str) -> bool:
    skill = parked.skill()
    library = work.libraries.get(parked.agent)
    action = EvolutionAction(kind="restore", agent=parked.agent, skill=skill.name, detail=why)
    if library is None or library.has(skill.name):
        return False
    try:
        work.libraries[parked.agent] = library.add(skill)
    except SkillError as error:
        work.actions.append(action.model_copy(update={"kind": "rejected", "detail": str(error)}))
        return False
    work.status.setdefault(parked.agent, {})[skill.name] = parked.status  # type: ignore[assignment]
    work.actions.append(action)
    return True


def _take_given(work: EvolutionWork, agent: str, given: Sequence[str], why: str) -> None:
    """Remove the skills an edit gave `agent` (refs agent/name of their sources)."""
    for ref in given:
        name = ref.partition("/")[2]
        library = work.libraries.get(agent)
        if library is None or not library.has(name):
            continue
        work.libraries[agent] = library.remove(name)
        work.status.get(agent, {}).pop(name, None)
        work.tallies.pop(f"{agent}/{name}", None)
        work.parents.pop(f"{agent}/{name}", None)
        work.actions.append(EvolutionAction(kind="demote", agent=agent, skill=name, detail=why))


def demote(
    work: EvolutionWork, members: Sequence[TeamMember], undo: RoundUndo
) -> tuple[list[TeamMember], Decision | None]:
    """Revert round `undo.round`'s promotions and restructuring edit in `work`; returns the team
    after the revert and the edit that was undone (None when it made none)."""
    why = f"drop after round {undo.round}"
    for ref in undo.promoted:
        agent, _, name = ref.partition("/")
        statuses = work.status.get(agent, {})
        if work.holds(ref) and statuses.get(name, "active") == "active":
            statuses[name] = "shadow"
            work.demoted.add(ref)
            work.actions.append(
                EvolutionAction(
                    kind="demote", agent=agent, skill=name, detail=f"{why}: back to the pool"
                )
            )
    for parked in undo.parked_parents:
        copy = parked.replaced_by
        back = _put_back(work, parked, f"{why}: its replacement went back to the pool")
        if back and copy and work.holds(copy):
            work.parents[copy] = f"{parked.agent}/{parked.skill().name}"
    edit = undo.edit
    if edit is None or edit.agent is None:
        return list(members), None
    if edit.action == "add":
        work.libraries.pop(edit.agent, None)
        work.status.pop(edit.agent, None)
        for ref in [r for r in work.tallies if r.startswith(f"{edit.agent}/")]:
            work.tallies.pop(ref)
        for ref in [r for r in work.parents if r.startswith(f"{edit.agent}/")]:
            work.parents.pop(ref)
        work.actions.append(
            EvolutionAction(kind="demote", agent=edit.agent, detail=f"{why}: specialist removed")
        )
    elif edit.action in ("modify", "merge"):
        _take_given(work, edit.agent, edit.skills, f"{why}: given by the reverted {edit.action}")
        if edit.action == "merge" and edit.removed:
            work.libraries[edit.removed] = SkillLibrary.empty(
                edit.removed, work.libraries[edit.agent].limit
            )
            for parked in undo.removed_library:
                _put_back(work, parked, f"{why}: merge reverted")
    return list(undo.members_before), edit
