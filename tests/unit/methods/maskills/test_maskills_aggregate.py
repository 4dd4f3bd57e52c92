"""MASkills aggregation: direct mapping of one credit, one merge call for several, evidence."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.methods.maskills.aggregate import aggregate, single_verdict
from grse_graph.methods.maskills.settings import MaskillsSettings
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.maskills.maskills_builders import (
    credit,
    library,
    record,
    residual,
    skill,
    trajectory,
)

LIBS = {
    "reader": library("reader", skill("extract"), skill("skim")),
    "answerer": library("answerer", skill("format")),
}
SETTINGS = MaskillsSettings()


def run(records: list, replies: list | None = None) -> tuple:
    model = ScriptedChatModel(replies or [])
    provider = FakeProvider({"optimizer": model})
    result = asyncio.run(aggregate(records, LIBS, provider, SETTINGS))
    return result, model, provider


@pytest.mark.parametrize(
    ("verdict", "edit", "expected"),
    [
        ("helped", "", "keep"),
        ("helped", "Add a check.", "refine"),
        ("neutral", "", "keep"),
        ("neutral", "Add a check.", "refine"),
        ("redundant", "Add a check.", "redundant"),
        ("harmful", "Add a check.", "low_utility"),
    ],
)
def test_single_credit_verdict_mapping(verdict: str, edit: str, expected: str) -> None:
    assert single_verdict(credit(verdict=verdict, edit=edit)) == expected


def test_a_single_credit_maps_directly_without_a_model_call() -> None:
    rec = record(
        trajectory(LIBS),
        [
            credit(
                "reader",
                "extract",
                verdict="helped",
                delta=0.4,
                edit="Quote it.",
                redundant_with=["skim", "extract"],
            )
        ],
    )
    result, model, provider = run([rec])
    assert provider.requests == [] and model.calls == []
    assert result.optimizer_calls == 0
    [d] = result.directions
    assert (d.agent, d.skill_id, d.verdict, d.utility) == ("reader", "extract", "refine", 0.4)
    assert d.credit_utility_mean == 0.4 and d.n_credits == 1
    assert d.summary == "it quoted the passage" and d.suggested_edit == "Quote it."
    assert d.redundant_with == ["skim"] and d.question_ids == ["q1"]
    assert not d.merged_by_model


def _two_records() -> list:
    return [
        record(trajectory(LIBS, qid="q1"), [credit(delta=0.8, edit="Quote it.")]),
        record(trajectory(LIBS, qid="q2"), [credit(verdict="harmful", delta=-0.2)]),
    ]


def test_several_credits_are_merged_by_one_optimizer_call_per_skill() -> None:
    merged = tool_call_message(
        "MergedGradient",
        {
            "summary": "helps when quoting",
            "verdict": "refine",
            "suggested_edit": "Quote the sentence.",
            "redundant_with": ["skim"],
            "utility_score": 0.1,
        },
    )
    result, model, provider = run(_two_records(), [merged])
    assert len(model.calls) == 1 and result.optimizer_calls == 1
    assert provider.requests == [("optimizer", None, 600)]
    prompt = str(model.calls[0][-1].content)
    assert "1. [helped, +0.80]" in prompt and "2. [harmful, -0.20]" in prompt
    [d] = result.directions
    assert d.merged_by_model and d.merge_error is None
    assert d.utility == 0.1  # the merge's own utility score (reference)
    assert d.credit_utility_mean == pytest.approx(0.3)  # what the moving average reads
    assert d.question_ids == ["q1", "q2"] and d.redundant_with == ["skim"]


def test_an_unusable_merge_falls_back_to_the_reference_rule_and_says_so() -> None:
    records = [
        record(trajectory(LIBS, qid="q1"), [credit(verdict="harmful", delta=-0.5)]),
        record(trajectory(LIBS, qid="q2"), [credit(verdict="harmful", delta=-0.3, edit="Cut.")]),
    ]
    result, _, _ = run(records, ["no call", "no call again"])
    [d] = result.directions
    assert not d.merged_by_model and d.merge_error
    assert d.utility == pytest.approx(-0.4)
    assert d.verdict == "low_utility"  # mean <= -0.3
    assert d.suggested_edit == "Cut."


def test_credits_of_skills_no_longer_in_the_library_are_skipped() -> None:
    rec = record(trajectory(LIBS), [credit("reader", "gone"), credit("answerer", "format")])
    result, _, _ = run([rec])
    assert [(d.agent, d.skill_id) for d in result.directions] == [("answerer", "format")]


def test_residual_summary_and_hard_cases_for_every_agent() -> None:
    records = [
        record(
            trajectory(LIBS, qid="q1", reward=0.2),
            residuals=[
                residual("reader", "missed the date", needs=True, missing="dates"),
                residual("answerer", "verbose"),
            ],
        ),
        record(
            trajectory(LIBS, qid="q2", reward=0.9),
            residuals=[residual("reader", "missed the date" + " again" * 20, needs=True)],
        ),
        record(trajectory(LIBS, qid="q3", reward=0.5), error="StructuredOutputError: bad"),
    ]
    result, _, _ = run(records)
    by_agent = {e.agent: e for e in result.agent_evidence}
    reader = by_agent["reader"]
    # Both kept: their first 80 characters differ.
    assert reader.items == ["missed the date (missing: dates) | missed the date" + " again" * 20]
    assert reader.missing_capabilities == ["dates"]
    # Reward <= 0.5, whatever the critic said, for EVERY agent; a failed critic leaves the reward.
    assert reader.hard_cases == [
        "reward=0.20; residual=missed the date; missing=dates",
        "reward=0.50",
    ]
    answerer = by_agent["answerer"]
    assert answerer.items == []
    assert answerer.hard_cases == ["reward=0.20; residual=verbose", "reward=0.50"]
    assert reader.question_ids == ["q1", "q2", "q3"]


def test_residuals_are_deduplicated_on_their_first_80_characters_and_capped() -> None:
    long = "x" * 80
    records = [
        record(
            trajectory(LIBS, qid=f"q{i}", reward=1.0),
            residuals=[residual("reader", f"{long}{i}" if i < 2 else f"gap {i}", needs=True)],
        )
        for i in range(9)
    ]
    result, _, _ = run(records)
    [reader] = result.agent_evidence
    parts = reader.items[0].split(" | ")
    assert parts == [f"{long}0", "gap 2", "gap 3", "gap 4", "gap 5"]
    assert reader.hard_cases == []


def test_invocation_counts_follow_the_trace() -> None:
    records = [record(trajectory(LIBS, qid="q1")), record(trajectory(LIBS, qid="q2"))]
    result, _, _ = run(records)
    assert result.invocations == {
        "reader": {"extract": 2, "skim": 2},
        "answerer": {"format": 2},
    }
