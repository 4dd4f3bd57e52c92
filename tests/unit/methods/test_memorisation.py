"""The memorisation check: skills are procedures, not copies of the training inputs."""

from __future__ import annotations

import asyncio
import logging

import pytest

from grse_graph.methods.operators import (
    MemorisationCheck,
    MemorisationSettings,
    OperatorContext,
    TrainingInputs,
    consolidate,
    induce,
    refine,
    training_inputs,
)
from grse_graph.methods.operators.memorisation import SourceText
from grse_graph.methods.plan import AggregationResult, EditDirection, OutputContrast
from grse_graph.tasks import load_task
from grse_graph.tasks.demo import DemoTask
from grse_graph.team import default_team
from grse_graph.training.records import OperatorLine
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.grse_methods_builders import library, skill
from tests.unit.methods.test_operators import direction, draft, induce_pattern

# The body the 0.5B optimizer induced on the demo (issue 13): a copied passage fact.
DEMO_MEMORY = "The Orrin Museum is an art museum in Osterlin. It opened in 1931."
PROCEDURE = """\
When it applies: the question names a work or a person and asks about a place or date linked \
to it.
Steps:
1. Find the passage about the entity the question names.
2. Follow its link to the second passage and read the requested fact there.
3. Hand on the bridge entity and the fact, citing both passages.
Check: the Candidate answer line holds only the short answer."""


@pytest.fixture(scope="module")
def demo_check() -> MemorisationCheck:
    """The check over the real demo task's training split, with the demo team's roles."""
    task = load_task("demo")
    roles = [agent.role for agent in default_team(task).agents]
    return MemorisationCheck.of(training_inputs(task, task.split("train"), roles))


def small_check(**settings: float) -> MemorisationCheck:
    inputs = TrainingInputs(
        sources=[
            SourceText(
                label="context of q1",
                text="[Passage 2] Orrin Museum\nThe Orrin Museum is an art museum in Osterlin. "
                "It opened in 1931 and shows 20 paintings by Mara Velt.",
            ),
            SourceText(label="question q1", text="In which city is the museum of Mara Velt?"),
            SourceText(label="answer of q1", text="Osterlin"),
        ],
        allowed=["Role: find the evidence in the passages. End with `Candidate answer: <x>`."],
    )
    return MemorisationCheck.of(inputs, MemorisationSettings(**settings))


def test_the_demo_body_that_quotes_a_passage_is_rejected(demo_check: MemorisationCheck) -> None:
    finding = demo_check.find(DEMO_MEMORY, skill="museum-facts")
    assert finding is not None and finding.rule == "copy"
    assert finding.span == "the orrin museum is an art museum in osterlin it opened in 1931"
    assert finding.source.startswith("context of demo-")
    assert finding.describe().startswith("memorised: copies 'the orrin museum")


def test_a_general_procedure_is_kept(demo_check: MemorisationCheck) -> None:
    assert demo_check.find(PROCEDURE) is None


# The retriever skill the 1.5B optimizer induced on the demo: its role prompt with a heading.
RESTATED_ROLE = (
    "When it applies: Multi-hop questions over numbered passages and questions about one long "
    "conversation.\nSteps:\n"
    "1. Identify which passages are relevant to the question and cite them as [Passage i].\n"
    "2. Follow the chain of reasoning hop by hop. When the question depends on an intermediate "
    "entity, name it explicitly and say which passage establishes it.\n"
    "3. Quote or paraphrase the exact sentences that support each hop.\n"
    "4. End with one line of the form `Candidate answer: <short answer>`.\n"
    "Check: Verify that the bridge entity is established in the correct order."
)


def test_a_body_that_restates_the_role_prompt_is_rejected(demo_check: MemorisationCheck) -> None:
    finding = demo_check.find(RESTATED_ROLE, skill="2-4")
    assert finding is not None and finding.rule == "restates"
    expected = "1 identify which passages are relevant to the question and cite them ..."
    assert finding.span == expected
    assert finding.describe().startswith("restates the agents' instructions (")
    share, _ = demo_check.restated_share(RESTATED_ROLE)
    assert 0.5 <= share < 1.0
    # A procedure that quotes a phrase or two of the role stays well under the share.
    assert demo_check.restated_share(PROCEDURE)[0] < 0.2


def test_the_restated_share_threshold_is_a_setting() -> None:
    role = "Role: find the evidence in the passages. End with `Candidate answer: <x>`."
    assert small_check().find(role) is not None
    assert small_check(max_restated_share=1.0).find(role + " Then check every hop twice.") is None


@pytest.mark.parametrize(
    ("body", "span"),
    [
        ("If the question is about the Orrin Museum, check its opening year.", "Orrin Museum"),
        ("Always look for passages about Osterlin first.", "Osterlin"),
        ("Answer with the year 1931 when unsure.", "1931"),
        # A possessive is still the name (the 0.5B optimizer wrote "Nadia's father").
        ("When Osterlin's museum is asked about, cite it.", "Osterlin"),
    ],
)
def test_a_body_naming_a_training_entity_is_rejected(body: str, span: str) -> None:
    finding = small_check().find(body)
    assert finding is not None and finding.rule == "entity" and finding.span == span


def test_the_demo_body_naming_a_speaker_with_a_possessive_is_rejected(
    demo_check: MemorisationCheck,
) -> None:
    # Induced on the demo (benchmarks/methods.py, 2026-12-01) and accepted before this check
    # saw through the possessive.
    body = "When the retriever does not know Nadia's father, identify relevant passages."
    finding = demo_check.find(body)
    assert finding is not None and finding.rule == "entity" and finding.span == "Nadia"


def test_role_text_and_short_numbers_are_not_held_against_a_body() -> None:
    check = small_check()
    # Eight words shared with the role prompt, capitalised role words, step counts.
    assert (
        check.find(
            "Find the evidence in the passages. End with `Candidate answer: <x>`. Before that, "
            "list each hop on its own line with the number of the passage that supports it, "
            "and drop every hop that no passage supports."
        )
        is None
    )
    assert (
        check.find("Use at most 20 words and 3 searches. Then Check the Candidate answer.") is None
    )


def test_the_copy_threshold_is_a_setting() -> None:
    seven = "an art museum in osterlin it opened"  # 7 words, no capitalised name
    assert small_check().copied_spans(seven) == []
    assert small_check(min_copied_words=5).copied_spans(seven) == [(seven, "context of q1")]


def test_mask_hides_question_specific_names_and_numbers() -> None:
    masked = small_check().mask(
        "The retriever missed Orrin Museum (1931); Osterlin was never named."
    )
    assert masked == "The retriever missed <name> (<number>); <name> was never named."


def test_training_inputs_keep_a_shared_context_once() -> None:
    task = load_task("demo")
    memory = [q for q in task.split("train") if DemoTask.is_memory(q)][:2]
    inputs = training_inputs(task, memory, ["role"])
    labels = [s.label for s in inputs.sources]
    assert labels.count(f"context of {memory[0].id}") == 1
    assert f"context of {memory[1].id}" not in labels  # the same conversation
    assert "role" in inputs.allowed


def ctx_with(replies: list, check: MemorisationCheck) -> tuple[OperatorContext, ScriptedChatModel]:
    model = ScriptedChatModel(replies)
    provider = FakeProvider({"optimizer": model})
    return OperatorContext(provider=provider, iteration=1, memorisation=check), model


def test_induce_rejects_a_memorised_body_counts_logs_and_records_it(
    demo_check: MemorisationCheck, caplog: pytest.LogCaptureFixture
) -> None:
    libs = {"retriever": library("retriever")}
    agg = AggregationResult(patterns=[induce_pattern(agent="retriever")])
    ctx, _ = ctx_with([draft(name="museum facts", body=DEMO_MEMORY)], demo_check)
    with caplog.at_level(logging.WARNING):
        out, [record] = asyncio.run(induce(libs, agg, ctx))
    assert out["retriever"].names() == [] and not record.changed
    assert record.memorisation is not None and record.memorisation.skill == "museum-facts"
    assert record.skipped_reason is not None and record.skipped_reason.startswith("memorised:")
    assert "museum-facts" in caplog.text and "orrin museum" in caplog.text
    # What operators.jsonl holds: the finding survives the round trip.
    line = OperatorLine.model_validate_json(
        OperatorLine(iteration=1, record=record).model_dump_json()
    )
    assert line.record.memorisation == record.memorisation


def test_induce_rejects_a_body_that_restates_its_evidence(demo_check: MemorisationCheck) -> None:
    # The 0.5B optimizer's demo skill: the diagnosis and the failed run's tool call, verbatim.
    libs = {"retriever": library("retriever")}
    pattern = induce_pattern(agent="retriever")
    example = pattern.examples[0]
    vague = example.diagnosis.model_copy(
        update={
            "explanation": "The retriever does not cover the case but the agent did not do "
            "what it says.",
            "correction": "Search with the words of the question.",
        }
    )
    contrast = OutputContrast(
        failed="Evidence: NO_EVIDENCE",
        failed_calls=['grep(query="<name>\'s father enjoys <name>") -> "No turn matches"'],
    )
    pattern = pattern.model_copy(
        update={"examples": [example.model_copy(update={"diagnosis": vague, "contrast": contrast})]}
    )
    copied = (
        "When it applies: The retriever does not cover the case but the agent did not do what "
        'it says. Its tool calls in a failed run: grep(query="<name>\'s father enjoys <name>") '
        '-> "No turn matches". Its output in a failed run ended: "Evidence: NO_EVIDENCE"'
    )
    ctx, _ = ctx_with([draft(name="two to four", body=copied)], demo_check)
    out, [record] = asyncio.run(induce(libs, AggregationResult(patterns=[pattern]), ctx))
    assert out["retriever"].names() == [] and record.memorisation is not None
    assert record.memorisation.rule == "restates"
    assert record.skipped_reason is not None
    assert record.skipped_reason.startswith("restates its evidence (")
    # Restating the critic's rule in a procedure of its own is fine.
    ctx, _ = ctx_with([draft(name="search keywords", body=PROCEDURE)], demo_check)
    out, _ = asyncio.run(induce(libs, AggregationResult(patterns=[pattern]), ctx))
    assert out["retriever"].names() == ["search-keywords"]


def test_induce_keeps_a_procedure_and_masks_the_evidence(demo_check: MemorisationCheck) -> None:
    libs = {"retriever": library("retriever")}
    pattern = induce_pattern(agent="retriever")
    example = pattern.examples[0]
    named = example.diagnosis.model_copy(
        update={"explanation": "The retriever never handed over the Orrin Museum passage."}
    )
    pattern = pattern.model_copy(
        update={"examples": [example.model_copy(update={"diagnosis": named})]}
    )
    ctx, model = ctx_with([draft(name="bridge hops", body=PROCEDURE)], demo_check)
    out, [record] = asyncio.run(induce(libs, AggregationResult(patterns=[pattern]), ctx))
    assert out["retriever"].names() == ["bridge-hops"] and record.memorisation is None
    prompt = str(model.calls[0][-1].content)
    assert "Orrin Museum" not in prompt and "never handed over the <name> passage" in prompt
    system = str(model.calls[0][0].content)
    assert "When it applies:" in system and "Check:" in system


def test_refine_that_adds_a_training_entity_is_not_applied() -> None:
    body = "Steps:\n1. Find the passage.\n2. Answer briefly."
    libs = {"reader": library("reader", skill("extract", body))}
    agg = AggregationResult(
        directions=[
            EditDirection(
                agent="reader", skill_id="extract", summary="s", verdict="refine", utility=0.0
            )
        ]
    )
    edit = {
        "op": "insert_after",
        "anchor": "2. Answer briefly.",
        "text": "3. Osterlin is the city.",
    }
    ctx, _ = ctx_with([tool_call_message("RefineEdits", {"edits": [edit]})], small_check())
    out, [record] = asyncio.run(refine(libs, agg, ctx))
    assert out["reader"].get("extract").body == body
    assert record.memorisation is not None and record.memorisation.span == "Osterlin"
    assert record.applied_edits == [] and "refinement not applied" in (record.skipped_reason or "")


def test_consolidate_rejects_new_names_but_not_what_the_members_said() -> None:
    planted = "Steps:\n1. Read Mara Velt passages first."  # a planted skill may name anything
    libs = {"reader": library("reader", skill("a", planted), skill("b", "Do B."))}
    agg = AggregationResult(directions=[direction("a", "redundant", 0.2, redundant_with=["b"])])
    merged_ok = draft(name="a and b", body=planted + "\n2. Do B.")
    merged_bad = draft(name="a and b", body=planted + "\n2. Answer Osterlin.")
    ctx, _ = ctx_with([merged_ok], small_check())
    out, [record] = asyncio.run(consolidate(libs, agg, ctx))
    assert out["reader"].names() == ["a-and-b"] and record.memorisation is None
    ctx, _ = ctx_with([merged_bad], small_check())
    out, [record] = asyncio.run(consolidate(libs, agg, ctx))
    assert out["reader"].names() == ["a", "b"]
    assert record.memorisation is not None and record.memorisation.span == "Osterlin"
