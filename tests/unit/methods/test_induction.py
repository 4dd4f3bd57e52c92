"""Induction from agent-level evidence (GRSE Algorithm 1, line 11): the critic's feedback and
the low-reward groups let an agent with an empty library gain its first skill."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from grse_graph.methods.grse.aggregate import aggregate
from grse_graph.methods.grse.critic_schema import CheckedDiagnosis, CritiqueResult
from grse_graph.methods.operators import OperatorSchedule, evolve
from grse_graph.methods.plan import AgentFeedback, AggregationResult, OutputContrast
from grse_graph.skills import SkillLibrary
from tests.fakes import FakeProvider, ScriptedChatModel
from tests.unit.methods.grse_methods_builders import critique, diagnosis, library
from tests.unit.methods.test_operators import draft

PROCEDURE = (
    "When it applies: every question.\nSteps:\n1. Copy each supporting sentence into the "
    "hand-off.\nCheck: the hand-off names the bridge entity."
)


def handoff_diagnosis(failure_type: str = "handoff_error"):
    """The 1.5B critic's kind of diagnosis: sound, but `no_edit` and tied to no skill."""
    return diagnosis(
        agent="retriever",
        skill_id=None,
        failure_type=failure_type,
        failed_refs=["r1.s1", "r2.s1", "r3.s1"],
        successful_refs=["r4.s1"],
        explanation="r1-r3 found the passage but did not hand over the bridge entity.",
        correction="Always state the bridge entity in the hand-off.",
        action="no_edit",
    )


def empty_team() -> dict[str, SkillLibrary]:
    return {"retriever": library("retriever"), "reasoner": library("reasoner")}


def plan(
    results: Sequence[CritiqueResult], rewards: dict[str, list[float]] | None
) -> AggregationResult:
    return asyncio.run(aggregate(results, empty_team(), FakeProvider(), group_rewards=rewards))


def induce_once(aggregation: AggregationResult, replies: list) -> tuple:
    model = ScriptedChatModel(replies)
    result = asyncio.run(
        evolve(
            empty_team(),
            aggregation,
            iteration=1,
            schedule=OperatorSchedule(),
            library_limit=4,
            provider=FakeProvider({"optimizer": model}),
        )
    )
    return result, model


def test_an_empty_library_gains_its_first_skill_from_a_low_reward_group() -> None:
    aggregation = plan([critique("q1", diagnoses=[handoff_diagnosis()])], {"q1": [0, 0, 0, 1]})
    # No structured pattern asks for a skill: the only diagnosis is no_edit.
    assert [p.action for p in aggregation.patterns] == ["no_edit"]
    [evidence] = aggregation.agent_evidence
    assert evidence.agent == "retriever" and evidence.question_ids == ["q1"]
    assert evidence.hard_cases[0].startswith("[handoff_error] r1-r3 found the passage")

    result, model = induce_once(aggregation, [draft(name="hand over bridge", body=PROCEDURE)])
    assert result.changed_agents == ["retriever"]
    assert result.candidates["retriever"].names() == ["hand-over-bridge"]
    [record] = [r for r in result.records if r.operator == "induce"]
    assert record.created == ["hand-over-bridge"] and record.evidence.question_ids == ["q1"]
    prompt = str(model.calls[0][-1].content)
    assert "In low-reward questions:" in prompt and "Always state the bridge entity" in prompt


def test_the_optimizer_sees_how_the_failed_and_successful_hand_offs_ended() -> None:
    contrast = OutputContrast(
        failed="Candidate answer: <name>.", successful="Evidence: <name> opened in <name>."
    )
    checked = CheckedDiagnosis(diagnosis=handoff_diagnosis(), status="accepted", contrast=contrast)
    aggregation = plan(
        [critique("q1").model_copy(update={"diagnoses": [checked]})], {"q1": [0, 0, 0, 1]}
    )
    assert aggregation.patterns[0].examples[0].contrast == contrast
    _, model = induce_once(aggregation, [draft(name="hand over bridge", body=PROCEDURE)])
    prompt = str(model.calls[0][-1].content)
    assert 'Its output in a failed run ended: "Candidate answer: <name>."' in prompt
    assert '; in a successful run: "Evidence: <name> opened in <name>."' in prompt


def test_a_group_in_which_half_the_runs_failed_is_a_low_reward_group() -> None:
    aggregation = plan([critique("q1", diagnoses=[handoff_diagnosis()])], {"q1": [0, 0, 1, 1]})
    [evidence] = aggregation.agent_evidence
    assert evidence.hard_cases[0].startswith("[handoff_error]")


def test_a_group_that_mostly_succeeded_is_no_induction_evidence() -> None:
    aggregation = plan([critique("q1", diagnoses=[handoff_diagnosis()])], {"q1": [1, 1, 1, 0.5]})
    assert aggregation.agent_evidence == []
    result, model = induce_once(aggregation, [])
    assert result.changed_agents == [] and model.calls == []


def test_tool_failures_and_uncertain_attributions_are_no_induction_evidence() -> None:
    results = [
        critique("q1", diagnoses=[handoff_diagnosis("tool_failure")]),
        critique("q2", diagnoses=[handoff_diagnosis("uncertain_attribution")]),
    ]
    assert plan(results, {"q1": [0.0] * 4, "q2": [0.0] * 4}).agent_evidence == []


def test_an_empty_library_gains_its_first_skill_from_agent_feedback() -> None:
    feedback = AgentFeedback(
        agent="reasoner", feedback="Answers repeat the question.", missing_capability=""
    )
    result = critique("q1").model_copy(update={"structured": False, "agent_feedback": [feedback]})
    aggregation = plan([result], None)
    assert [e.agent for e in aggregation.agent_evidence] == ["reasoner"]
    evolved, model = induce_once(aggregation, [draft(name="short answers", body=PROCEDURE)])
    assert evolved.changed_agents == ["reasoner"]
    assert "Answers repeat the question." in str(model.calls[0][-1].content)
