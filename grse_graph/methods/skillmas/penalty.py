"""The penalty after a round-level drop (spec §5.5, §9.2 row 17).

The code only flags a drop (previous success rate - this one > 0.02). `drop_policy=demote`
acts on it: the skills promoted in the previous round go back to the pool (shadow), the parents
their promotion disabled come back, and the previous round's restructuring edit is reverted
(an added specialist leaves the team, a modified agent loses the skills it was given and its
boundary note, a merged-away agent comes back with its library). What that takes is recorded at
the end of every round as a `RoundUndo` in the method state, so a resumed run reverts exactly
what an uninterrupted one would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.errors import SkillError
from grse_graph.skills import SkillLibrary

from .restructure import Decision
from .skills import ParkedSkill
from .state import RoundUndo
from .team import TeamMember
from .work import EvolutionAction, EvolutionWork


def round_undo(
    iteration: int,
    work: EvolutionWork,
    members_before: Sequence[TeamMember],
    decision: Decision,
    removed_library: SkillLibrary | None,
    removed_status: Mapping[str, str],
) -> RoundUndo:
    """What reverting this round would take (its promotions and its restructuring edit)."""
    parked = (
        [
            ParkedSkill.of(removed_library.agent, s, removed_status.get(s.name, "active"))
            for s in removed_library.skills
        ]
        if removed_library is not None
        else []
    )
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
        if work.libraries.get(agent, SkillLibrary.empty(agent)).has(name) and (
            statuses.get(name, "active") == "active"
        ):
            statuses[name] = "shadow"
            work.demoted.add(ref)
            work.actions.append(
                EvolutionAction(
                    kind="demote", agent=agent, skill=name, detail=f"{why}: back to the pool"
                )
            )
    for parked in undo.parked_parents:
        if _put_back(work, parked, f"{why}: its replacement went back to the pool"):
            copy = parked.replaced_by
            if copy and work.libraries.get(copy.partition("/")[0], SkillLibrary.empty("x")).has(
                copy.partition("/")[2]
            ):
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
