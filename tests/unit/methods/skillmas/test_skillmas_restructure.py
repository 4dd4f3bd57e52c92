"""§9.4: restructuring decisions, code-exact and with row 20's guards, and their application."""

from __future__ import annotations

from grse_graph.methods.skillmas.restructure import build_artifacts, decide
from grse_graph.methods.skillmas.retention import retain
from grse_graph.methods.skillmas.round import apply_decision
from grse_graph.methods.skillmas.tables import ExecutorUtilityTable
from grse_graph.methods.skillmas.team import TeamMember, insert_before_final, runs_for
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.skills import Skill, SkillLibrary

SEEDS = [TeamMember(name="retriever", seed=True), TeamMember(name="reasoner", seed=True)]


def failures(n: int, tau: str = "multi-hop", **fields: object) -> list[VerifiedTrace]:
    return [
        VerifiedTrace.model_validate(
            {
                "rollout_id": f"r{i}",
                "question_id": f"q{i}",
                "task_type": tau,
                "task": "q",
                "success": False,
                "score": 0.2,
                "executors": ["retriever", "reasoner"],
                "error_message": "wrong",
                **fields,
            }
        )
        for i in range(n)
    ]


def artifacts(traces: list[VerifiedTrace], handoff: set[str] | None = None, owned=None, q=None):
    retained = retain(traces, {}).items
    return build_artifacts(retained, [], owned or {}, q or ExecutorUtilityTable(), handoff or set())


def test_code_exact_round_one_adds_a_specialist() -> None:
    arts = artifacts(failures(5))
    assert arts[0].failures == 5 and arts[0].overlap == 0.0 and arts[0].pending == []
    decision = decide(arts, SEEDS, mode="code")
    assert decision.action == "add"
    assert decision.task_type == "multi-hop"


def test_guarded_round_one_keeps_without_structural_evidence() -> None:
    decision = decide(artifacts(failures(5)), SEEDS, mode="guarded")
    assert decision.action == "keep"
    assert decision.guard is not None and "no structural evidence" in decision.guard
    assert decision.evidence is not None and decision.evidence.failures == 5


def test_guarded_add_on_handoff_tag_or_persistence_after_repair() -> None:
    traces = failures(3)
    tagged = decide(artifacts(traces, handoff={"r0"}), SEEDS)
    assert tagged.action == "add"
    persistent = decide(
        artifacts(traces), SEEDS, previous_mass={"multi-hop": 2}, repaired_types=["multi-hop"]
    )
    assert persistent.action == "add"
    no_repair = decide(artifacts(traces), SEEDS, previous_mass={"multi-hop": 2})
    assert no_repair.action == "keep"


def test_guarded_caps_the_team_at_four_agents() -> None:
    team = [
        *SEEDS[:1],
        TeamMember(name="specialist-a", seed=False, targets=["a"]),
        TeamMember(name="specialist-b", seed=False, targets=["b"]),
        SEEDS[1],
    ]
    decision = decide(artifacts(failures(3), handoff={"r0"}), team)
    assert decision.action == "keep"
    assert "at most 4" in (decision.guard or "")
    assert decide(artifacts(failures(3), handoff={"r0"}), team, mode="code").action == "add"


def test_below_failure_mass_keeps() -> None:
    assert decide(artifacts(failures(1)), SEEDS, mode="code").action == "keep"


def test_merge_never_removes_a_seed_when_guarded() -> None:
    traces = failures(3, used={"retriever": ["x"], "reasoner": ["x"]})
    owned = {"retriever": ["x"], "reasoner": ["x"]}
    q = ExecutorUtilityTable().update("retriever", "multi-hop", 1.0)
    arts = artifacts(traces, owned=owned, q=q)
    assert arts[0].overlap == 1.0
    code = decide(arts, SEEDS, mode="code")
    assert code.action == "merge" and code.removed == "reasoner"
    guarded = decide(arts, SEEDS, mode="guarded")
    assert guarded.action != "merge"
    assert "protected" in (guarded.guard or "")


def test_merge_removes_the_specialist_instead_of_a_seed() -> None:
    team = [
        SEEDS[0],
        TeamMember(name="specialist-multi-hop", seed=False, targets=["multi-hop"]),
        SEEDS[1],
    ]
    traces = failures(
        3,
        executors=["retriever", "specialist-multi-hop", "reasoner"],
        used={"specialist-multi-hop": ["x"], "reasoner": ["x"]},
    )
    owned = {"specialist-multi-hop": ["x"], "reasoner": ["x"]}
    q = ExecutorUtilityTable().update("specialist-multi-hop", "multi-hop", 1.0)
    decision = decide(artifacts(traces, owned=owned, q=q), team)
    assert decision.action == "merge"
    assert decision.removed == "specialist-multi-hop"
    assert decision.team_after == ["retriever", "reasoner"]


def test_apply_add_inserts_a_specialist_before_the_final_agent_with_copied_skills() -> None:
    skill = Skill.build(name="x", description="d", body="## Steps\n1. go")
    libraries = {
        "retriever": SkillLibrary.empty("retriever", 4),
        "reasoner": SkillLibrary.build("reasoner", [skill], 4),
    }
    traces = failures(3, used={"reasoner": ["x"]})
    decision = decide(artifacts(traces), SEEDS, mode="code")
    applied, members, libs, q = apply_decision(
        decision, list(SEEDS), libraries, ExecutorUtilityTable(), 4, {}
    )
    assert [m.name for m in members] == ["retriever", "specialist-multi-hop", "reasoner"]
    assert applied.team_after == [m.name for m in members]
    assert libs["specialist-multi-hop"].names() == ["x"]
    assert libs["specialist-multi-hop"].get("x").metadata["skillmas-id"] == "reasoner/x"
    assert libs["reasoner"].names() == ["x"]  # add copies, the owner keeps it
    assert q.agents["specialist-multi-hop"].is_extension
    assert runs_for(members[1], "multi-hop") and not runs_for(members[1], "single-hop")


def test_insert_before_final() -> None:
    new = TeamMember(name="n", seed=False)
    assert [m.name for m in insert_before_final(SEEDS, new)] == ["retriever", "n", "reasoner"]
