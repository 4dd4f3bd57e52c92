"""Aggregation: directions per (agent, skill), patterns with support by distinct questions."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.methods.grse.aggregate import aggregate, direction_verdict
from grse_graph.methods.grse.critic_schema import CritiqueResult
from grse_graph.methods.plan import AgentFeedback
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import credit, critique, diagnosis, library, skill

LIBS = {
    "reader": library("reader", skill("extract"), skill("cite")),
    "answerer": library("answerer"),
}


def induce_diag(**kw):
    return diagnosis(action="induce", skill_id=None, failure_type="missing_capability", **kw)


def test_support_counts_distinct_questions() -> None:
    results = [
        # two rollouts of q1 diagnosed with the same pattern count once
        critique(
            "q1", diagnoses=[induce_diag(failed_refs=["r2.s1"]), induce_diag(failed_refs=["r3.s1"])]
        ),
        critique("q2", diagnoses=[induce_diag()]),
        critique("q3", diagnoses=[induce_diag()], status="dropped"),
        critique("q4", diagnoses=[diagnosis(action="no_edit", failure_type="answer_format")]),
        critique("q5", diagnoses=[induce_diag()], status="repaired"),
    ]
    out = asyncio.run(aggregate(results, LIBS, FakeProvider()))
    top = out.patterns[0]
    assert (top.agent, top.failure_type, top.skill_id, top.action) == (
        "reader",
        "missing_capability",
        None,
        "induce",
    )
    assert top.support == 3 and top.question_ids == ["q1", "q2", "q5"]
    # one example per distinct question first
    assert [e.question_id for e in top.examples] == ["q1", "q2", "q5"]
    assert [p.support for p in out.patterns] == sorted(
        (p.support for p in out.patterns), reverse=True
    )
    assert out.patterns[1].failure_type == "answer_format" and out.patterns[1].support == 1
    assert out.counts.dropped == 1 and out.counts.accepted == 4 and out.counts.repaired == 1


def test_single_credit_maps_without_model_call() -> None:
    model = ScriptedChatModel([])
    provider = FakeProvider({"optimizer": model})
    c = credit(
        verdict="helped",
        utility=0.6,
        suggested_refinement="add an example",
        redundant_with=["cite"],
    )
    supported = critique("q1", credits=[c], diagnoses=[diagnosis()])
    out = asyncio.run(aggregate([supported], LIBS, provider))
    [d] = out.directions
    assert model.calls == [] and provider.requests == [] and out.optimizer_calls == 0
    assert (d.verdict, d.utility, d.suggested_edit, d.n_credits) == (
        "refine",
        0.6,
        "add an example",
        1,
    )
    assert d.redundant_with == ["cite"] and d.question_ids == ["q1"]


def test_several_credits_merged_by_one_optimizer_call() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message(
                "MergedDirection", {"summary": "s", "suggested_edit": "e", "verdict": "refine"}
            )
        ]
    )
    provider = FakeProvider({"optimizer": model})
    results = [
        critique("q1", credits=[credit(utility=-0.4)]),
        critique(
            "q2",
            credits=[credit(utility=0.8), credit("reader", "cite", verdict="helped", utility=1.0)],
        ),
        critique("q3", credits=[credit("reader", "gone")]),  # not in the library: unusable
    ]
    out = asyncio.run(aggregate(results, LIBS, provider, max_tokens=1200))
    assert len(model.calls) == 1 and out.optimizer_calls == 1
    assert provider.requests == [("optimizer", None, 1200)]
    merged = out.direction("reader", "extract")
    assert merged is not None and merged.merged_by_model
    assert merged.utility == pytest.approx(0.2) and merged.n_credits == 2
    assert merged.question_ids == ["q1", "q2"] and merged.verdict == "refine"
    single = out.direction("reader", "cite")
    assert single is not None and single.verdict == "keep"
    assert out.direction("reader", "gone") is None


@pytest.mark.parametrize(
    ("kw", "verdict"),
    [
        ({"verdict": "redundant", "utility": 0.0}, "redundant"),
        ({"verdict": "harmful", "utility": -0.9}, "low_utility"),
        ({"verdict": "harmful", "utility": -0.9, "suggested_refinement": "fix"}, "refine"),
        ({"verdict": "neutral", "utility": -0.6}, "low_utility"),
        ({"verdict": "neutral", "utility": 0.0}, "keep"),
        ({"verdict": "helped", "utility": 0.9}, "keep"),
    ],
)
def test_direction_verdict_of_one_credit(kw: dict, verdict: str) -> None:
    assert direction_verdict(credit(**kw), -0.5) == verdict


def test_with_labels_groups_evidence_by_category() -> None:
    model = ScriptedChatModel(
        [
            tool_call_message(
                "MergedDirection", {"summary": "s", "suggested_edit": "", "verdict": "refine"}
            )
        ]
    )
    results = [
        critique(
            "q1",
            credits=[credit(evidence="e1")],
            category="temporal",
            diagnoses=[induce_diag(explanation="x1")],
        ),
        critique(
            "q2",
            credits=[credit(evidence="e2")],
            category="multi-hop",
            diagnoses=[induce_diag(explanation="x2")],
        ),
    ]
    out = asyncio.run(aggregate(results, LIBS, FakeProvider({"optimizer": model})))
    assert out.with_labels
    assert out.direction("reader", "extract").evidence_by_category == {
        "temporal": ["e1"],
        "multi-hop": ["e2"],
    }
    assert out.patterns[0].evidence_by_category == {"temporal": ["x1"], "multi-hop": ["x2"]}
    prompt = model.calls[0][-1].content
    assert "Category temporal:" in prompt and "Category multi-hop:" in prompt


def test_agent_feedback_becomes_evidence() -> None:
    r = critique("q1").model_copy(
        update={
            "agent_feedback": [
                AgentFeedback(
                    agent="answerer", feedback="too long", missing_capability="short answers"
                )
            ]
        }
    )
    out = asyncio.run(aggregate([r], LIBS, FakeProvider()))
    [ev] = out.agent_evidence
    assert (
        ev.agent == "answerer" and ev.missing_capabilities == ["short answers"] and ev.support == 1
    )


def test_without_structure_credits_give_directions_and_no_patterns() -> None:
    r = CritiqueResult(
        question_id="q1",
        structured=False,
        credits=[credit(verdict="harmful", utility=-0.9, suggested_refinement="")],
        agent_feedback=[
            AgentFeedback(agent="reader", feedback="quote passages", missing_capability="")
        ],
    )
    out = asyncio.run(aggregate([r], LIBS, FakeProvider()))
    assert not out.structured
    # The harmful credit makes a prune candidate: the variant can prune and consolidate.
    assert [(d.skill_id, d.verdict) for d in out.directions] == [("extract", "low_utility")]
    assert out.patterns == []
    assert out.agent_evidence[0].agent == "reader"


def test_unusable_merge_output_falls_back_to_rule_based_merge_and_is_recorded() -> None:
    model = ScriptedChatModel(["not a call", "still not a call"])
    results = [
        critique(
            "q1",
            credits=[credit(evidence="e1", suggested_refinement="s1")],
            diagnoses=[diagnosis()],
        ),
        critique(
            "q2",
            credits=[credit(evidence="e2", suggested_refinement="s2")],
            diagnoses=[diagnosis()],
        ),
        critique("q3", credits=[credit(evidence="e3", verdict="redundant")]),
    ]
    out = asyncio.run(aggregate(results, LIBS, FakeProvider({"optimizer": model})))
    d = out.direction("reader", "extract")
    assert d is not None and not d.merged_by_model and d.merge_error
    assert (d.summary, d.suggested_edit, d.verdict) == ("e1 | e2 | e3", "s1 | s2", "refine")


def test_a_credit_suggestion_needs_an_accepted_refine_diagnosis_of_its_question() -> None:
    harmful = credit(verdict="harmful", utility=-0.8, suggested_refinement="rewrite it")
    results = [
        critique("q1", credits=[harmful]),  # no diagnosis at all
        critique("q2", credits=[harmful], diagnoses=[diagnosis()], status="dropped"),
        critique("q3", credits=[harmful], diagnoses=[diagnosis(skill_id="cite")]),
    ]
    for result in results:
        out = asyncio.run(aggregate([result], LIBS, FakeProvider()))
        [d] = out.directions
        # The suggestion is not attributed: the harmful skill is a prune candidate instead.
        assert (d.verdict, d.suggested_edit) == ("low_utility", "")
        assert out.unattributed_refinements == 1
    accepted = critique("q4", credits=[harmful], diagnoses=[diagnosis()])
    out = asyncio.run(aggregate([accepted], LIBS, FakeProvider()))
    assert out.directions[0].verdict == "refine" and out.unattributed_refinements == 0
