"""Row 17: `drop_policy=demote` puts the previous round's promotions back into the pool (with the
parents they disabled) and reverts its restructuring edit; `flag` (the code) only reports."""

from __future__ import annotations

import asyncio
from typing import Any

from grse_graph.methods.skillmas.diagnosis import AnalystEvidence
from grse_graph.methods.skillmas.evolution import evaluate_pool
from grse_graph.methods.skillmas.restructure import Decision, decide
from grse_graph.methods.skillmas.round import apply_decision, update_round
from grse_graph.methods.skillmas.settings import SkillmasSettings
from grse_graph.methods.skillmas.skills import ORIGIN_KEY, ParkedSkill
from grse_graph.methods.skillmas.state import RoundUndo, SkillmasState, demote, round_undo
from grse_graph.methods.skillmas.tables import ExecutorUtilityTable, SkillUtilityTable
from grse_graph.methods.skillmas.team import TeamMember
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.methods.skillmas.work import EvolutionWork
from grse_graph.skills import Skill, SkillLibrary
from tests.unit.methods.skillmas.skillmas_fakes import SKILL_BODY, FakeProvider, handoff_responder
from tests.unit.methods.skillmas.test_skillmas_restructure import SEEDS, artifacts, failures


def auto(name: str) -> Skill:
    return Skill.build(
        name=name, description=f"{name}.", body=SKILL_BODY, metadata={ORIGIN_KEY: "evolution"}
    )


def work_of(libraries: dict[str, list[Skill]], status: dict[str, dict[str, Any]]) -> EvolutionWork:
    return EvolutionWork(
        libraries={a: SkillLibrary.build(a, s, 4) for a, s in libraries.items()},
        status=status,
        table=SkillUtilityTable(),
    )


def test_demote_returns_promotions_to_the_pool_and_restores_their_parents() -> None:
    parent, copy = auto("colours"), auto("colours-r1")
    work = work_of({"reasoner": [copy]}, {"reasoner": {"colours-r1": "active"}})
    undo = RoundUndo(
        round=1,
        promoted=["reasoner/colours-r1"],
        parked_parents=[ParkedSkill.of("reasoner", parent, replaced_by="reasoner/colours-r1")],
    )
    members, reverted = demote(work, SEEDS, undo)
    assert reverted is None and [m.name for m in members] == ["retriever", "reasoner"]
    assert work.status["reasoner"] == {"colours-r1": "shadow", "colours": "active"}
    assert work.libraries["reasoner"].get("colours") == parent
    assert work.parents == {"reasoner/colours-r1": "reasoner/colours"}
    # a demoted skill waits at least one round: this round's uses do not promote it again
    uses = [
        VerifiedTrace(
            rollout_id=f"u{i}",
            question_id=f"u{i}",
            task_type="t",
            task="q",
            success=True,
            used={"reasoner": ["colours-r1"]},
        )
        for i in range(3)
    ]
    evaluate_pool(work, uses, 3, 0.6)
    assert work.status["reasoner"]["colours-r1"] == "shadow" and work.pool == []


def test_demote_reverts_an_added_specialist() -> None:
    libraries = {
        "retriever": SkillLibrary.empty("retriever", 4),
        "reasoner": SkillLibrary.build("reasoner", [auto("x")], 4),
    }
    decision = decide(artifacts(failures(3, used={"reasoner": ["x"]})), SEEDS, mode="code")
    status: dict[str, dict[str, str]] = {}
    applied, members, libs, _ = apply_decision(
        decision, list(SEEDS), libraries, ExecutorUtilityTable(), 4, status
    )
    assert "specialist-multi-hop" in libs
    work = EvolutionWork(libraries=libs, status=status, table=SkillUtilityTable())  # type: ignore[arg-type]
    undo = round_undo(1, work, SEEDS, applied, None, {})
    members, reverted = demote(work, members, undo)
    assert reverted is not None and reverted.action == "add"
    assert [m.name for m in members] == ["retriever", "reasoner"]
    assert "specialist-multi-hop" not in work.libraries
    assert "specialist-multi-hop" not in work.status
    assert work.libraries["reasoner"].names() == ["x"]


def test_demote_reverts_a_merge_and_a_modify() -> None:
    team = [
        SEEDS[0],
        TeamMember(name="specialist-multi-hop", seed=False, targets=["multi-hop"]),
        SEEDS[1],
    ]
    libraries = {
        "retriever": SkillLibrary.empty("retriever", 4),
        "specialist-multi-hop": SkillLibrary.build("specialist-multi-hop", [auto("x"), auto("y")]),
        "reasoner": SkillLibrary.build("reasoner", [auto("x")], 4),
    }
    traces = failures(
        3,
        executors=["retriever", "specialist-multi-hop", "reasoner"],
        used={"specialist-multi-hop": ["x"], "reasoner": ["x"]},
    )
    owned = {"specialist-multi-hop": ["x"], "reasoner": ["x"]}
    q = ExecutorUtilityTable().update("specialist-multi-hop", "multi-hop", 0.0)
    decision = decide(artifacts(traces, owned=owned, q=q), team)
    assert decision.action == "merge" and decision.removed == "specialist-multi-hop"
    status = {"specialist-multi-hop": {"y": "shadow"}}
    removed = libraries["specialist-multi-hop"]
    applied, members, libs, _ = apply_decision(decision, team, libraries, q, 4, status)
    assert applied.agent == "retriever"  # the highest utility (first of the tie) is the target
    assert libs["retriever"].names() == ["x", "y"] and "specialist-multi-hop" not in libs
    work = EvolutionWork(libraries=libs, status=status, table=SkillUtilityTable())  # type: ignore[arg-type]
    undo = round_undo(1, work, team, applied, removed, {"y": "shadow"})
    members, reverted = demote(work, members, undo)
    assert reverted is not None and reverted.action == "merge"
    assert [m.name for m in members] == [m.name for m in team]
    assert work.libraries["retriever"].names() == [] and work.libraries["reasoner"].names() == ["x"]
    assert work.libraries["specialist-multi-hop"].names() == ["x", "y"]
    assert work.status["specialist-multi-hop"] == {"x": "active", "y": "shadow"}

    modify = Decision(
        action="modify", task_type="multi-hop", agent="reasoner", skills=["retriever/z"], reason="r"
    )
    libraries = {
        "retriever": SkillLibrary.build("retriever", [auto("z")], 4),
        "reasoner": SkillLibrary.empty("reasoner", 4),
    }
    applied, members, libs, _ = apply_decision(
        modify, list(SEEDS), libraries, ExecutorUtilityTable(), 4, {}
    )
    assert libs["reasoner"].names() == ["z"] and members[1].boundary
    work = EvolutionWork(libraries=libs, status={}, table=SkillUtilityTable())
    members, _ = demote(work, members, round_undo(1, work, SEEDS, applied, None, {}))
    assert work.libraries["reasoner"].names() == [] and members[1].boundary == ""
    assert work.libraries["retriever"].names() == ["z"]


def quiet(schema: str, messages: list[Any]) -> dict[str, Any]:
    answer = handoff_responder(schema, messages)
    if schema == "ClusterAnalysis":
        return {**answer, "dominant_cause": "other", "unique": False, "tag": "none"}
    return answer


def test_update_round_demotes_only_with_the_demote_policy_and_a_drop() -> None:
    specialist = TeamMember(name="specialist-multi-hop", seed=False, targets=["multi-hop"])
    added = Decision(action="add", task_type="multi-hop", agent=specialist.name, reason="r")
    state = SkillmasState(
        iteration=1,
        members=[SEEDS[0], specialist, SEEDS[1]],
        previous_success_rate=1.0,
        undo=RoundUndo(round=1, edit=added, members_before=list(SEEDS)),
    )
    libraries = {m.name: SkillLibrary.empty(m.name, 4) for m in state.members}
    traces = failures(4, executors=["retriever", "specialist-multi-hop", "reasoner"])

    def run(policy: str, previous: float) -> SkillmasState:
        outcome = asyncio.run(
            update_round(
                state.model_copy(update={"previous_success_rate": previous}),
                iteration=2,
                traces=traces,
                judge_calls=0,
                sources=AnalystEvidence({}, {}, libraries, FakeProvider(quiet)),
                settings=SkillmasSettings(drop_policy=policy),  # type: ignore[arg-type]
                library_limit=4,
            )
        )
        return outcome.state

    demoted = run("demote", 1.0)
    assert demoted.round is not None and demoted.round.drop == 1.0
    assert demoted.round.reverted is not None and demoted.round.reverted.action == "add"
    assert [m.name for m in demoted.members] == ["retriever", "reasoner"]
    assert demoted.undo is not None and demoted.undo.round == 2
    # the round's own decision sees only the reverted team (the specialist ran, but is gone)
    decision = demoted.round.restructuring
    assert decision is not None and decision.evidence is not None
    assert decision.evidence.executors == ["retriever", "reasoner"]
    flagged = run("flag", 1.0)
    assert flagged.round is not None and flagged.round.drop == 1.0
    assert flagged.round.reverted is None and len(flagged.members) == 3 and flagged.undo is None
    no_drop = run("demote", 0.0)
    assert no_drop.round is not None and no_drop.round.reverted is None
    assert len(no_drop.members) == 3
