"""Skill evolution: LEARN needs a contrast, CREATE needs a locally diagnosable cluster, new and
revised skills enter the pool as shadow, refine/prune follow the code's Q rules, and a promoted
revised copy disables its parent."""

from __future__ import annotations

import asyncio
from typing import Any

from grse_graph.methods.skillmas.diagnosis import ClusterAnalysis, Diagnosis
from grse_graph.methods.skillmas.evolution import evaluate_pool
from grse_graph.methods.skillmas.skills import ORIGIN_KEY, TASK_KEY, content_problems
from grse_graph.methods.skillmas.tables import SkillUtilityTable
from grse_graph.methods.skillmas.trace import VerifiedTrace
from grse_graph.methods.skillmas.work import EvolutionWork, RoundEvidence
from grse_graph.skills import Skill, SkillLibrary
from tests.unit.methods.skillmas.skillmas_fakes import (
    HANDOFF_ANALYSIS,
    SKILL_BODY,
    Calls,
    FakeProvider,
    create,
    learn,
    prune,
    refine,
)

AGENTS = ["retriever", "reasoner"]


def trace(rid: str, success: bool, tau: str = "multi-hop", used: list[str] | None = None):
    return VerifiedTrace(
        rollout_id=rid,
        question_id=rid,
        task_type=tau,
        task="q",
        success=success,
        executors=AGENTS,
        used={"reasoner": used or []},
        error_message="" if success else "wrong",
    )


def work(
    skills: list[Skill] | None = None, table: SkillUtilityTable | None = None
) -> EvolutionWork:
    return EvolutionWork(
        libraries={
            "retriever": SkillLibrary.empty("retriever", 4),
            "reasoner": SkillLibrary.build("reasoner", skills or [], 4),
        },
        status={},
        table=table or SkillUtilityTable(),
    )


def evidence(
    traces: list[VerifiedTrace], diagnoses: list[Diagnosis] | None = None
) -> RoundEvidence:
    return RoundEvidence(
        round=1,
        traces=traces,
        retained=[],
        diagnoses=diagnoses or [],
        agents=AGENTS,
        final_agent="reasoner",
    )


def writer(schema: str, messages: list[Any]) -> dict[str, Any]:
    return {"agent": "reasoner", "description": "Answer colour questions.", "body": SKILL_BODY}


def test_learn_needs_success_and_failure_and_writes_a_shadow_skill() -> None:
    calls = Calls()
    w = work()
    asyncio.run(
        learn(
            w,
            evidence([trace("s", True, "a"), trace("f", False, "b")]),
            FakeProvider(writer, calls),
        )
    )
    assert calls.log == []  # no type has both a success and a failure
    asyncio.run(
        learn(w, evidence([trace("s", True), trace("f", False)]), FakeProvider(writer, calls))
    )
    assert calls.count("OwnedSkillDraft") == 1
    skill = w.libraries["reasoner"].get("multi-hop-learned-r1")
    assert (
        skill.metadata[ORIGIN_KEY] == "trajectory-learning"
        and skill.metadata[TASK_KEY] == "multi-hop"
    )
    assert w.status["reasoner"]["multi-hop-learned-r1"] == "shadow"
    assert w.new_skills == ["reasoner/multi-hop-learned-r1"]
    assert "reasoner/multi-hop-learned-r1" in w.table.skills


def test_learn_rejects_thin_or_duplicate_drafts() -> None:
    thin = FakeProvider(lambda s, m: {"agent": "reasoner", "description": "x", "body": "Be good."})
    w = work()
    asyncio.run(learn(w, evidence([trace("s", True), trace("f", False)]), thin))
    assert w.new_skills == [] and w.actions[0].kind == "rejected"
    assert content_problems("Be good.")
    existing = Skill.build(
        name="old",
        description="Answer colour questions.",
        body=SKILL_BODY,
        metadata={ORIGIN_KEY: "trajectory-learning"},
    )
    w = work([existing])
    asyncio.run(learn(w, evidence([trace("s", True), trace("f", False)]), FakeProvider(writer)))
    assert w.new_skills == [] and "near duplicate" in w.actions[0].detail


def diagnosis(tag: str, cause: str, skills: list[str] | None = None) -> Diagnosis:
    a = ClusterAnalysis.model_validate(
        {
            **HANDOFF_ANALYSIS,
            "dominant_cause": cause,
            "tag": tag,
            "recommended_action": "create_skill",
            "implicated_skills": skills or [],
        }
    )
    return Diagnosis(
        cluster="c",
        task_type="multi-hop",
        tier="P0",
        priority=0.8,
        rollout_ids=["f"],
        agents=AGENTS,
        skills=[f"reasoner/{s}" for s in skills or []],
        analysis=a,
        unique=True,
        tag=tag,
    )  # type: ignore[arg-type]


def test_create_only_for_locally_diagnosable_failures() -> None:
    calls = Calls()
    w = work()
    traces = [trace("f", False), trace("s", True, "single-hop")]
    handoff = diagnosis("none", "bad executor assignment").model_copy(
        update={"tag": "handoff-to-structure"}
    )
    asyncio.run(create(w, evidence(traces, [handoff]), FakeProvider(writer, calls)))
    assert calls.log == [] and [a.kind for a in w.actions] == ["noop"]
    asyncio.run(
        create(
            w,
            evidence(traces, [diagnosis("add-guard", "missing precondition")]),
            FakeProvider(writer, calls),
        )
    )
    assert w.status["reasoner"]["multi-hop-rl-r1"] == "shadow"
    assert w.repaired_types == ["multi-hop"]


def test_repair_of_an_implicated_skill_is_a_shadow_copy_that_replaces_its_parent_on_promotion() -> (
    None
):
    parent = Skill.build(
        name="colours",
        description="Old colour rule.",
        body="## Steps\n1. guess",
        metadata={ORIGIN_KEY: "failure-pattern", TASK_KEY: "multi-hop"},
    )
    w = work([parent])
    traces = [trace("f", False, used=["colours"]), trace("s", True, "single-hop")]
    asyncio.run(
        create(
            w,
            evidence(traces, [diagnosis("reorder-step", "incorrect action order", ["colours"])]),
            FakeProvider(writer),
        )
    )
    assert w.parents == {"reasoner/colours-r1": "reasoner/colours"}
    assert w.libraries["reasoner"].names() == ["colours", "colours-r1"]
    uses = [trace(f"u{i}", True, used=["colours-r1"]) for i in range(3)]
    evaluate_pool(w, uses, 3, 0.6)
    assert w.status["reasoner"]["colours-r1"] == "active"
    assert w.status["reasoner"]["colours"] == "disabled"
    assert w.libraries["reasoner"].names() == ["colours-r1"]


def test_refine_and_prune_follow_the_q_rules_and_spare_seeds() -> None:
    auto = Skill.build(
        name="weak", description="Weak.", body=SKILL_BODY, metadata={ORIGIN_KEY: "evolution"}
    )
    seed = Skill.build(name="seed", description="Seed.", body=SKILL_BODY)
    table = SkillUtilityTable()
    for _ in range(5):
        table = table.update("reasoner/seed", "t", "reasoner", 0.0).update(
            "reasoner/weak", "t", "reasoner", 0.0
        )
    w = work([auto, seed], table)
    refined = SKILL_BODY.replace("single colour word", "one colour word")
    calls = Calls()
    asyncio.run(refine(w, evidence([]), FakeProvider(lambda s, m: {"body": refined}, calls)))
    assert calls.count("RefinedBody") == 1  # the seed took a slot but was not refined
    assert w.libraries["reasoner"].get("weak").body == refined
    prune(w)
    assert w.libraries["reasoner"].names() == ["seed"]
    assert w.status["reasoner"]["weak"] == "disabled"


def test_code_rule_creates_without_a_verified_cause() -> None:
    calls = Calls()
    w = work()
    traces = [trace("f", False), trace("s", True, "single-hop")]
    asyncio.run(create(w, evidence(traces), FakeProvider(writer, calls), require_diagnosis=False))
    assert calls.count("DrawnSkill") == 1
    assert w.status["reasoner"]["multi-hop-rl-r1"] == "shadow"
    assert w.actions[-1].detail == "no verified cause (code rule)"


def test_split_skill_adds_a_narrower_shadow_skill_and_narrows_the_parent() -> None:
    parent = Skill.build(
        name="colours",
        description="Every colour question.",
        body="## Steps\n1. guess",
        metadata={ORIGIN_KEY: "failure-pattern", TASK_KEY: "multi-hop"},
    )
    w = work([parent])

    def answer(schema: str, messages: list[Any]) -> dict[str, Any]:
        if schema == "NarrowedDescription":
            return {"description": "Single-item colour questions only."}
        return writer(schema, messages)

    traces = [trace("f", False, used=["colours"]), trace("s", True, "single-hop")]
    split = diagnosis("split-skill", "skill conflict", ["colours"])
    asyncio.run(create(w, evidence(traces, [split]), FakeProvider(answer)))
    assert w.status["reasoner"]["multi-hop-rl-r1"] == "shadow"
    assert (
        w.libraries["reasoner"].get("colours").description == "Single-item colour questions only."
    )
    assert w.parents == {}
    tighten = diagnosis("tighten-retrieval", "misleading retrieval match", ["colours"])
    w = work([parent])
    asyncio.run(create(w, evidence(traces, [tighten]), FakeProvider(answer)))
    assert w.libraries["reasoner"].names() == ["colours"]  # in place, no new skill
    assert [a.kind for a in w.actions] == ["tighten"]


def test_pool_disables_after_failed_evaluations_and_keeps_tallies_of_waiting_skills() -> None:
    copy = Skill.build(
        name="colours-r1", description="C.", body=SKILL_BODY, metadata={ORIGIN_KEY: "evolution"}
    )
    waiting = Skill.build(
        name="waits", description="W.", body=SKILL_BODY, metadata={ORIGIN_KEY: "evolution"}
    )
    w = work([copy, waiting])
    w.status = {"reasoner": {"colours-r1": "shadow", "waits": "shadow"}}
    w.parents = {"reasoner/colours-r1": "reasoner/colours"}
    uses = [trace(f"u{i}", False, used=["colours-r1"]) for i in range(3)]
    uses.append(trace("w", True, used=["waits"]))
    evaluate_pool(w, uses, 3, 0.6, counting="cumulative", disable_after=1)
    assert [(d.skill, d.decision) for d in w.pool] == [("colours-r1", "disable"), ("waits", "hold")]
    assert w.libraries["reasoner"].names() == ["waits"]
    assert w.status["reasoner"]["colours-r1"] == "disabled" and w.parents == {}
    assert set(w.tallies) == {"reasoner/waits"} and w.tallies["reasoner/waits"].uses == 1
    evaluate_pool(w, uses[-1:] * 2, 3, 0.6, counting="cumulative", disable_after=1)
    assert w.pool[-1].decision == "promote" and w.pool[-1].uses == 3  # 1 + 2, cumulative
    assert w.tallies == {}
