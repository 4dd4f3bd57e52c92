"""Evolution operators: refine, induce, consolidate, prune and evolve."""

from __future__ import annotations

import asyncio
from typing import Any

from grse_graph.methods.operators import (
    OperatorContext,
    OperatorSchedule,
    OperatorSettings,
    consolidate,
    evolve,
    induce,
    prune,
    refine,
)
from grse_graph.methods.operators.text import diagnosis_example_lines, normalise_name
from grse_graph.methods.plan import (
    AgentEvidence,
    AggregationResult,
    EditDirection,
    InductionPattern,
    PatternExample,
)
from grse_graph.skills.text import approx_tokens
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import diagnosis, library, skill

BODY = "1. Read the question.\n2. Find the passage.\n3. Answer briefly."


def direction(skill_id: str, verdict: str, utility: float = 0.0, **kw: Any) -> EditDirection:
    return EditDirection(
        agent="reader",
        skill_id=skill_id,
        summary=f"{skill_id} summary",
        verdict=verdict,
        utility=utility,
        n_credits=1,
        question_ids=["q1"],
        **kw,
    )


def induce_pattern(support: int = 2, agent: str = "reader") -> InductionPattern:
    d = diagnosis(action="induce", skill_id=None, failure_type="answer_format", agent=agent)
    return InductionPattern(
        agent=agent,
        failure_type="answer_format",
        skill_id=None,
        action="induce",
        support=support,
        question_ids=[f"q{i}" for i in range(support)],
        examples=[PatternExample(question_id="q0", diagnosis=d)],
    )


def ctx_with(replies: list, **kw: Any) -> tuple[OperatorContext, ScriptedChatModel, FakeProvider]:
    model = ScriptedChatModel(replies)
    provider = FakeProvider({"optimizer": model})
    return (
        OperatorContext(provider=provider, iteration=kw.pop("iteration", 2), **kw),
        model,
        provider,
    )


def edits(*items: tuple[str, str, str]):
    return tool_call_message(
        "RefineEdits", {"edits": [{"op": o, "anchor": a, "text": t} for o, a, t in items]}
    )


def draft(
    name: str = "Answer Formatting!",
    body: str = "Answer with the entity only.",
    description: str = "Formats\nanswers.",
):
    return tool_call_message("SkillDraft", {"name": name, "description": description, "body": body})


# ----- refine -------------------------------------------------------------------------------


def test_refine_applies_edits_records_skips_and_provenance() -> None:
    libs = {"reader": library("reader", skill("extract", BODY))}
    agg = AggregationResult(
        directions=[direction("extract", "refine", -0.4, suggested_edit="quote")]
    )
    ctx, model, provider = ctx_with(
        [edits(("insert_after", "Find the passage.", "   Quote it."), ("delete", "missing", ""))]
    )
    out, records = asyncio.run(refine(libs, agg, ctx))
    new = out["reader"].get("extract")
    assert "   Quote it." in new.body.splitlines()
    assert new.parent_hash == libs["reader"].get("extract").content_hash()
    assert new.iteration == 2 and new.provenance == "refine iteration=2 questions=q1"
    [r] = records
    assert r.changed and len(r.applied_edits) == 1 and r.n_skipped == 1
    assert r.skipped_edits[0].reason == "anchor not found"
    assert r.evidence.verdict == "refine" and r.evidence.utility == -0.4
    assert provider.requests == [("optimizer", None, 800)]
    assert "quote" in model.calls[0][-1].content  # the suggested edit is in the prompt


def test_refine_without_applicable_edit_leaves_library_unchanged() -> None:
    libs = {"reader": library("reader", skill("extract", BODY))}
    agg = AggregationResult(directions=[direction("extract", "refine")])
    ctx, _, _ = ctx_with([edits(("replace", "nowhere", "x"))])
    out, [record] = asyncio.run(refine(libs, agg, ctx))
    assert out["reader"] == libs["reader"]
    assert not record.changed and record.skipped_reason == "no edit could be applied"


def test_refine_over_body_cap_is_not_applied() -> None:
    libs = {"reader": library("reader", skill("extract", BODY))}
    agg = AggregationResult(directions=[direction("extract", "refine")])
    ctx, _, _ = ctx_with(
        [edits(("insert_after", "Answer briefly.", "x" * 400))],
        settings=OperatorSettings(body_token_cap=50),
    )
    out, [record] = asyncio.run(refine(libs, agg, ctx))
    assert out["reader"] == libs["reader"] and "over the cap" in (record.skipped_reason or "")


def test_refine_targets_keep_and_missing_skills_untouched() -> None:
    libs = {"reader": library("reader", skill("extract", BODY))}
    agg = AggregationResult(directions=[direction("extract", "keep"), direction("gone", "refine")])
    ctx, model, _ = ctx_with([])
    out, records = asyncio.run(refine(libs, agg, ctx))
    assert records == [] and model.calls == [] and out == libs


# ----- induce -------------------------------------------------------------------------------


def test_induce_normalises_and_records_provenance() -> None:
    libs = {"reader": library("reader")}
    agg = AggregationResult(patterns=[induce_pattern(support=2)])
    ctx, _, provider = ctx_with([draft()], iteration=1)
    out, [record] = asyncio.run(induce(libs, agg, ctx))
    new = out["reader"].get("answer-formatting")
    assert new.description == "Formats answers."
    assert new.iteration == 1 and new.agent == "reader"
    assert new.provenance == "induce iteration=1 questions=q0,q1 failure=answer_format"
    assert record.created == ["answer-formatting"] and record.evidence.support == 2
    assert provider.requests == [("optimizer", None, 1200)]


def test_induce_caps_body_and_uniquifies_name() -> None:
    libs = {"reader": library("reader", skill("answer-formatting"))}
    long_body = "\n".join(f"Rule {i}: be precise and brief." for i in range(400))
    agg = AggregationResult(patterns=[induce_pattern()])
    ctx, _, _ = ctx_with([draft(body=long_body)])
    out, [record] = asyncio.run(induce(libs, agg, ctx))
    new = out["reader"].get("answer-formatting-2")
    assert record.truncated and approx_tokens(new.body) <= 1200
    assert new.body.endswith("be precise and brief.")  # cut at a line end


def test_html_entities_in_a_drafted_skill_are_decoded() -> None:
    libs = {"reader": library("reader")}
    agg = AggregationResult(patterns=[induce_pattern()])
    body = "End with `Candidate answer: &lt;short answer&gt;` &amp; nothing else."
    ctx, _, _ = ctx_with([draft(body=body, description="Formats &quot;answers&quot;.")])
    out, _ = asyncio.run(induce(libs, agg, ctx))
    new = out["reader"].get("answer-formatting")
    assert new.body == "End with `Candidate answer: <short answer>` & nothing else."
    assert new.description == 'Formats "answers".'


def test_a_proposed_name_without_a_letter_takes_the_fallback() -> None:
    # The 0.5B and 1.5B optimizers both named their skills "2-4", echoing the prompt's count.
    assert normalise_name("2-4", "handoff_error", []) == "handoff-error"
    assert normalise_name("2-4", "handoff_error", ["handoff-error"]) == "handoff-error-2"
    assert normalise_name("quote-2-hops", "handoff_error", []) == "quote-2-hops"
    # ... or only echoing the prompt's name rule.
    echoes = (
        "two-to-four",
        "Two to four lowercase words",
        "words-joined-by-hyphens",
        "two-to-four-hypen-word-skill-with-hyphens-description",
    )
    for echo in echoes:
        assert normalise_name(echo, "handoff_error", []) == "handoff-error"
    assert normalise_name("answer-in-few-words", "handoff_error", []) == "answer-in-few-words"


def test_induce_respects_library_limit_without_model_call() -> None:
    libs = {"reader": library("reader", skill("a"), skill("b"))}
    agg = AggregationResult(patterns=[induce_pattern()])
    ctx, model, _ = ctx_with([], library_limit=2)
    out, [record] = asyncio.run(induce(libs, agg, ctx))
    assert out == libs and model.calls == []
    assert record.skipped_reason == "library is at its limit of 2 skills"


def test_induce_at_most_one_per_agent_by_default_best_support_first() -> None:
    libs = {"reader": library("reader")}
    weak = induce_pattern(support=1).model_copy(update={"failure_type": "evidence_missing"})
    agg = AggregationResult(patterns=[induce_pattern(support=3), weak])
    ctx, model, _ = ctx_with([draft()])
    _, records = asyncio.run(induce(libs, agg, ctx))
    assert len(model.calls) == 1 and records[0].evidence.failure_type == "answer_format"


def test_induce_from_agent_feedback_needs_a_missing_capability_also_unstructured() -> None:
    # With a skill to refine, feedback asks for a new skill only when it names a capability
    # (an empty library induces from any feedback: tests/unit/methods/test_induction.py).
    libs = {"answerer": library("answerer", skill("a"))}
    vague = AgentEvidence(agent="answerer", items=["too long"], question_ids=["q1"])
    agg = AggregationResult(structured=False, agent_evidence=[vague])
    ctx, model, _ = ctx_with([draft(name="short answers")])
    out, _ = asyncio.run(induce(libs, agg, ctx))
    # w/o structure keeps the critic's agent feedback as is: no capability, no induce attempt.
    assert out["answerer"].names() == ["a"] and not model.calls
    named = vague.model_copy(update={"missing_capabilities": ["short answers"]})
    ctx, _, _ = ctx_with([draft(name="short answers")])
    out, _ = asyncio.run(induce(libs, agg.model_copy(update={"agent_evidence": [named]}), ctx))
    assert out["answerer"].names() == ["a", "short-answers"]


# ----- consolidate --------------------------------------------------------------------------


def test_consolidate_merges_redundant_group_with_one_call() -> None:
    libs = {"reader": library("reader", skill("a", "Do A."), skill("b", "Do B."), skill("c"))}
    agg = AggregationResult(
        directions=[
            direction("a", "redundant", 0.2, redundant_with=["b"]),
            direction("b", "keep", 0.4),
        ]
    )
    ctx, model, _ = ctx_with([draft(name="a-and-b", body="Do A. Do B.")])
    out, [record] = asyncio.run(consolidate(libs, agg, ctx))
    assert out["reader"].names() == ["a-and-b", "c"] and len(model.calls) == 1
    merged = out["reader"].get("a-and-b")
    assert merged.parent_hash == libs["reader"].get("a").content_hash()
    assert "merged=a@" in (merged.provenance or "") and ",b@" in (merged.provenance or "")
    assert record.removed == ["a", "b"] and record.created == ["a-and-b"]
    assert merged.utility is not None and abs(merged.utility - 0.3) < 1e-9


# ----- prune --------------------------------------------------------------------------------


def test_prune_removes_low_utility_but_never_empties() -> None:
    libs = {
        "reader": library("reader", skill("a"), skill("b")),
        "answerer": library("answerer", skill("c")),
    }
    agg = AggregationResult(
        directions=[
            direction("a", "low_utility", -0.9),
            direction("b", "low_utility", -0.6),
            direction("c", "low_utility", -0.9).model_copy(update={"agent": "answerer"}),
        ]
    )
    ctx, _, _ = ctx_with([])
    out, records = prune(libs, agg, ctx)
    assert out["reader"].names() == ["b"]  # worst removed first, last one kept
    assert out["answerer"].names() == ["c"]
    kept = [r for r in records if r.skipped_reason]
    assert {r.skills[0] for r in kept} == {"b", "c"}
    assert all("never empty" in (r.skipped_reason or "") for r in kept)


def test_prune_uses_recorded_utility_without_direction() -> None:
    bad = skill("a").with_utility(-0.8)
    libs = {"reader": library("reader", bad, skill("b").with_utility(0.5))}
    out, [record] = prune(libs, AggregationResult(), ctx_with([])[0])
    assert out["reader"].names() == ["b"] and record.removed == ["a"]


# ----- evolve -------------------------------------------------------------------------------


def test_evolve_follows_schedule_and_reports_changed_agents() -> None:
    libs = {"reader": library("reader", skill("extract", BODY)), "answerer": library("answerer")}
    agg = AggregationResult(
        directions=[direction("extract", "keep", 0.7)],
        patterns=[induce_pattern(agent="answerer")],
    )
    model = ScriptedChatModel([draft()])
    result = asyncio.run(
        evolve(
            libs,
            agg,
            iteration=1,
            schedule=OperatorSchedule(),
            library_limit=4,
            provider=FakeProvider({"optimizer": model}),
        )
    )
    assert result.operators == ["refine", "induce"]
    assert result.changed_agents == ["answerer"]  # utility bookkeeping is not a change
    assert result.candidates["reader"].get("extract").utility == 0.7
    assert result.candidates["answerer"].names() == ["answer-formatting"]
    assert [r.operator for r in result.records] == ["induce"]
    # The result is written to the run folder and must read back equal.
    assert type(result).model_validate_json(result.model_dump_json()) == result


def test_diagnosis_example_lines_cap_the_examples_and_tag_hypotheses() -> None:
    pattern = InductionPattern(
        agent="reader",
        failure_type="skill_defect",
        skill_id="extract",
        action="refine",
        support=3,
        examples=[
            PatternExample(question_id="q0", diagnosis=diagnosis(explanation="first.")),
            PatternExample(
                question_id="q1",
                diagnosis=diagnosis(explanation="second.", correction="check the date"),
                is_hypothesis=True,
            ),
            PatternExample(question_id="q2", diagnosis=diagnosis(explanation="third.")),
        ],
    )
    assert diagnosis_example_lines(pattern, 2) == [
        "- first. Correction: quote the passage that names the capital",
        "- second. Correction (hypothesis): check the date",
    ]


# ----- issue 9 item 7: links since the last consolidation, conflicts ------------------------


def test_redundancy_seen_between_consolidations_is_carried_to_the_next_one() -> None:
    from grse_graph.methods.operators.consolidate import (
        links_since_consolidation,
        redundant_groups,
    )
    from grse_graph.methods.operators.schedule import OperatorSchedule

    lib = library("reader", skill("a"), skill("b"), skill("c"))
    schedule = OperatorSchedule()  # consolidate at iterations 2, 4
    earlier = {
        1: AggregationResult(directions=[direction("a", "redundant", redundant_with=["b"])]),
        2: AggregationResult(directions=[direction("b", "keep", conflicts_with=["c"])]),
        3: AggregationResult(directions=[direction("a", "redundant", redundant_with=["c"])]),
    }
    now = AggregationResult(directions=[direction("a", "keep")])
    # Iteration 2 sees iteration 1's link; nothing of this iteration names it.
    assert redundant_groups(lib, links_since_consolidation(now, 2, earlier, schedule)) == [
        ["a", "b"]
    ]
    # Iteration 4 carries iteration 3 only: iteration 2 consolidated (its links were used then).
    at_4 = links_since_consolidation(now, 4, earlier, schedule)
    assert [(x.skill_id, x.other, x.iteration) for x in at_4.carried_links] == [("a", "c", 3)]
    assert redundant_groups(lib, at_4) == [["a", "c"]]


def test_conflicting_skills_are_consolidated_and_the_optimizer_is_told() -> None:
    libs = {"reader": library("reader", skill("a", "Always cite."), skill("b", "Never cite."))}
    agg = AggregationResult(directions=[direction("a", "keep", conflicts_with=["b"])])
    ctx, model, _ = ctx_with([draft(name="citing")])
    out, records = asyncio.run(consolidate(libs, agg, ctx))
    assert out["reader"].names() == ["citing"]
    assert "a <-> b" in str(model.calls[0][-1].content)
    assert records[0].operator == "consolidate"


def test_operators_see_the_role_task_and_the_other_skills_bodies() -> None:
    libs = {"reader": library("reader", skill("a", "Quote the passage."), skill("b", BODY))}
    agg = AggregationResult(patterns=[induce_pattern(support=2)])
    ctx, model, _ = ctx_with(
        [draft(name="new one")],
        agent_context={"reader": "Task: locomo, category temporal.\nRole: you retrieve."},
    )
    asyncio.run(induce(libs, agg, ctx))
    prompt = str(model.calls[0][-1].content)
    assert "category temporal" in prompt and "Role: you retrieve." in prompt
    assert "Quote the passage." in prompt and "Find the passage." in prompt  # both bodies
    assert "do not duplicate or contradict" in prompt


def test_body_cap_counts_with_the_given_counter() -> None:
    from grse_graph.methods.operators.text import cap_body

    body = "\n".join(f"step {i} do the thing" for i in range(50))

    def words(text: str) -> int:
        return len(text.split())

    cut, truncated = cap_body(body, 40, words)
    assert truncated and words(cut) <= 40 and cut.endswith("thing")
    assert cap_body(body, 1000, words) == (body, False)
