"""MASkills' operators: prune rule, induce evidence and limit, consolidation bookkeeping, order."""

from __future__ import annotations

import asyncio

import pytest

from grse_graph.methods.maskills.method import MaskillsMethod
from grse_graph.methods.maskills.operators import Induce, consolidate_with_stats, prune, prune_marks
from grse_graph.methods.maskills.settings import MaskillsSettings
from grse_graph.methods.operators.base import OperatorContext
from grse_graph.methods.operators.evolve import evolve
from grse_graph.methods.operators.schedule import OperatorSchedule
from grse_graph.methods.plan import AgentEvidence, AggregationResult, EditDirection
from tests.fakes import FakeProvider, ScriptedChatModel, tool_call_message
from tests.unit.methods.maskills.maskills_builders import library, skill

SETTINGS = MaskillsSettings()


def ctx(provider: object = None, limit: int | None = None) -> OperatorContext:
    return OperatorContext(
        provider=provider or FakeProvider({}),  # type: ignore[arg-type]
        iteration=1,
        library_limit=limit,
        settings=SETTINGS.operators,
    )


def direction(
    name: str, verdict: str = "keep", utility: float = 0.0, **kw: object
) -> EditDirection:
    return EditDirection(
        agent="reader",
        skill_id=name,
        summary=f"about {name}",
        verdict=verdict,  # type: ignore[arg-type]
        utility=utility,
        n_credits=1,
        **kw,  # type: ignore[arg-type]
    )


def test_prune_marks_follow_the_reference_rule() -> None:
    lib = library(
        "reader",
        skill("a-low-verdict"),
        skill("b-refine-at-threshold"),
        skill("c-refine-above"),
        skill("d-uncredited-never-invoked", **{"grse-utility": "-0.4"}),
        skill("e-uncredited-invoked", **{"grse-utility": "-0.9", "grse-invocations": "3"}),
        skill("f-redundant", **{"grse-utility": "-0.1"}),
        skill("g-uncredited-fresh"),
    )
    aggregation = AggregationResult(
        directions=[
            direction("a-low-verdict", "low_utility", 0.2),
            direction("b-refine-at-threshold", "refine", -0.3),
            direction("c-refine-above", "refine", -0.29),
            direction("f-redundant", "redundant", -0.1),
        ]
    )
    marked = [name for name, _ in prune_marks(lib, aggregation, -0.3)]
    assert marked == ["a-low-verdict", "b-refine-at-threshold", "d-uncredited-never-invoked"]

    libs, records = asyncio.run(prune({"reader": lib}, aggregation, ctx()))
    assert libs["reader"].names() == [
        "c-refine-above",
        "e-uncredited-invoked",
        "f-redundant",
        "g-uncredited-fresh",
    ]
    assert [r.removed for r in records] == [[n] for n in marked]


def test_when_every_skill_is_marked_the_last_marked_in_library_order_survives() -> None:
    lib = library("reader", skill("alpha"), skill("beta"), skill("gamma"))
    # Utilities chosen so "worst first" would keep alpha; the reference keeps the last one.
    aggregation = AggregationResult(
        directions=[
            direction("alpha", "low_utility", 0.9),
            direction("beta", "low_utility", -1.0),
            direction("gamma", "low_utility", -0.5),
        ]
    )
    libs, records = asyncio.run(prune({"reader": lib}, aggregation, ctx()))
    assert libs["reader"].names() == ["gamma"]
    assert [r.changed for r in records] == [True, True, False]
    assert records[-1].skipped_reason


def _evidence(**kw: object) -> AgentEvidence:
    return AgentEvidence(agent="reader", **kw)  # type: ignore[arg-type]


DRAFT = {
    "name": "date-check",
    "description": "Check dates. Use for when-questions.",
    "body": "Check the date.",
}


def test_induce_makes_at_most_one_skill_per_agent_from_residual_and_first_hard_cases() -> None:
    model = ScriptedChatModel([tool_call_message("SkillDraft", DRAFT)] * 3)
    provider = FakeProvider({"optimizer": model})
    cases = [f"reward=0.0{i}" for i in range(8)]
    aggregation = AggregationResult(
        agent_evidence=[
            _evidence(
                items=["missed the date (missing: dates)"], question_ids=["q1"], hard_cases=cases
            ),
        ]
    )
    libs, records = asyncio.run(
        Induce(max_hard_cases=6)({"reader": library("reader")}, aggregation, ctx(provider, limit=4))
    )
    assert libs["reader"].names() == ["date-check"]
    assert len(model.calls) == 1 and [r.created for r in records] == [["date-check"]]
    prompt = str(model.calls[0][-1].content)
    assert "Residual pattern: missed the date (missing: dates)" in prompt
    assert "reward=0.05" in prompt and "reward=0.06" not in prompt


def test_induce_with_hard_cases_only_and_skipped_at_the_limit() -> None:
    model = ScriptedChatModel([tool_call_message("SkillDraft", DRAFT)])
    provider = FakeProvider({"optimizer": model})
    aggregation = AggregationResult(
        agent_evidence=[
            _evidence(hard_cases=["reward=0.00"], question_ids=["q1"]),
            AgentEvidence(agent="answerer", hard_cases=["reward=0.00"], question_ids=["q1"]),
        ]
    )
    libs = {"reader": library("reader"), "answerer": library("answerer", skill("one"))}
    out, records = asyncio.run(Induce(6)(libs, aggregation, ctx(provider, limit=1)))
    assert out["reader"].names() == ["date-check"]
    assert out["answerer"].names() == ["one"]
    assert records[1].skipped_reason == "library is at its limit of 1 skills"
    assert len(model.calls) == 1


def test_no_evidence_no_induce_call() -> None:
    out, records = asyncio.run(
        Induce(6)({"reader": library("reader")}, AggregationResult(), ctx(FakeProvider({})))
    )
    assert out["reader"].names() == [] and records == []


def test_consolidated_skill_gets_mean_utility_and_summed_invocations() -> None:
    lib = library(
        "reader",
        skill("quote", **{"grse-utility": "0.2", "grse-invocations": "3"}),
        skill("cite", **{"grse-utility": "-0.6", "grse-invocations": "2"}),
    )
    aggregation = AggregationResult(
        directions=[
            direction("quote", "redundant", 0.9, redundant_with=["cite"]),
            direction("cite", "redundant", 0.9),
        ]
    )
    draft = {
        "name": "quote-evidence",
        "description": "Quote evidence. Use always.",
        "body": "Quote.",
    }
    provider = FakeProvider(
        {"optimizer": ScriptedChatModel([tool_call_message("SkillDraft", draft)])}
    )
    libs, _ = asyncio.run(consolidate_with_stats({"reader": lib}, aggregation, ctx(provider)))
    merged = libs["reader"].get("quote-evidence")
    assert libs["reader"].names() == ["quote-evidence"]
    assert merged.utility == pytest.approx(-0.2)
    assert merged.invocations == 5


def test_operators_run_refine_consolidate_prune_induce() -> None:
    method = MaskillsMethod(MaskillsSettings())
    spec = method.evolution()
    assert tuple(spec.order) == ("refine", "consolidate", "prune", "induce")
    seen: list[str] = []

    def spy(name: str):
        async def op(libraries, aggregation, ctx):  # type: ignore[no-untyped-def]
            seen.append(name)
            return dict(libraries), []

        return op

    operators = {name: spy(name) for name in spec.operators}
    every = OperatorSchedule(refine_every=1, induce_every=1, consolidate_every=1, prune_every=1)
    asyncio.run(
        evolve(
            {"reader": library("reader")},
            AggregationResult(),
            iteration=1,
            schedule=every,
            library_limit=4,
            provider=FakeProvider({}),
            settings=spec.settings,
            order=spec.order,
            operators=operators,
            utility_rule=method.utility_rule(),
        )
    )
    assert seen == ["refine", "consolidate", "prune", "induce"]


def test_the_method_swaps_in_its_own_prune_induce_and_consolidate() -> None:
    spec = MaskillsMethod(MaskillsSettings()).evolution()
    assert spec.operators["prune"] is prune
    assert spec.operators["consolidate"] is consolidate_with_stats
    assert isinstance(spec.operators["induce"], Induce)
    assert spec.settings.prune_utility_threshold == -0.3
    assert spec.settings.max_new_skills_per_agent == 1
