"""`apply_probe_credit`: measured skill effects beside the critic's directions in a plan, and
what prune makes of them (no model, no engine)."""

from __future__ import annotations

import pytest

from grse_graph.methods.operators.prune import prune_candidates
from grse_graph.methods.plan import AggregationResult, DirectionVerdict, EditDirection
from grse_graph.probes import ProbeResult, SkillEffect
from grse_graph.probes.credit import apply_probe_credit
from grse_graph.probes.effects import EffectVerdict
from grse_graph.skills import Skill, SkillLibrary

AGENT = "reasoner"


def measured(skill: str, verdict: EffectVerdict, effect: float | None = None) -> SkillEffect:
    value = {"helps": 0.4, "hurts": -0.4, "no effect": 0.05}[verdict] if effect is None else effect
    return SkillEffect(
        agent=AGENT,
        skill=skill,
        effect=value,
        low=value - 0.1,
        high=value + 0.1,
        questions=4,
        verdict=verdict,
    )


def probe(*effects: SkillEffect) -> ProbeResult:
    return ProbeResult(
        design="leave_one_out",
        questions=["q0", "q1", "q2", "q3"],
        budget=40,
        runs=16,
        runs_resumed=0,
        full_reward=0.5,
        effects=list(effects),
    )


def critic(skill: str, verdict: DirectionVerdict, utility: float) -> EditDirection:
    return EditDirection(
        agent=AGENT, skill_id=skill, summary="critic says so", utility=utility, verdict=verdict
    )


def plan(*directions: EditDirection) -> AggregationResult:
    return AggregationResult(directions=list(directions))


def credited(aggregation: AggregationResult, effect: SkillEffect) -> AggregationResult:
    return apply_probe_credit(aggregation, probe(effect))


def test_hurts_on_a_skill_the_critic_is_silent_about_makes_a_prune_target() -> None:
    result = credited(plan(), measured("bad", "hurts"))
    direction = result.direction(AGENT, "bad")
    assert direction is not None
    assert direction.verdict == "low_utility" and direction.utility == pytest.approx(-0.4)
    assert "did not credit" in direction.summary and "measured effect -0.400" in direction.summary
    assert direction.question_ids == ["q0", "q1", "q2", "q3"]
    [evidence] = result.probe_evidence
    assert evidence.decided_by == "probe" and not evidence.contradicts
    assert evidence.critic_utility is None and evidence.critic_verdict is None
    skills = [
        Skill.build(name=n, description=f"Use for {n}.", body="Do it.") for n in ("bad", "ok")
    ]
    library = SkillLibrary.build(AGENT, skills)
    assert [name for name, _ in prune_candidates(library, result, threshold=-0.3)] == ["bad"]


def test_hurts_against_a_positive_critic_is_a_contradiction_the_probe_decides() -> None:
    result = credited(plan(critic("bad", "keep", 0.6)), measured("bad", "hurts"))
    direction = result.direction(AGENT, "bad")
    assert direction is not None
    assert direction.verdict == "low_utility" and direction.utility == pytest.approx(-0.4)
    assert direction.summary.startswith("critic says so (measured effect -0.400")
    [evidence] = result.probe_evidence
    assert evidence.contradicts and evidence.decided_by == "probe"
    assert evidence.critic_utility == 0.6 and evidence.critic_verdict == "keep"
    assert evidence.verdict == "hurts" and evidence.effect == pytest.approx(-0.4)


def test_hurts_agreeing_with_a_negative_critic_is_no_contradiction() -> None:
    result = credited(plan(critic("bad", "low_utility", -0.7)), measured("bad", "hurts"))
    [evidence] = result.probe_evidence
    assert not evidence.contradicts and evidence.decided_by == "probe"
    assert evidence.critic_utility == -0.7


@pytest.mark.parametrize("verdict", ["low_utility", "redundant"])
def test_helps_overrides_a_pruning_critic_to_keep(verdict: DirectionVerdict) -> None:
    result = credited(plan(critic("good", verdict, -0.5)), measured("good", "helps"))
    direction = result.direction(AGENT, "good")
    assert direction is not None
    assert direction.verdict == "keep" and direction.utility == pytest.approx(0.4)
    [evidence] = result.probe_evidence
    assert evidence.contradicts and evidence.decided_by == "probe"
    assert evidence.critic_verdict == verdict and evidence.critic_utility == -0.5


def test_helps_keeps_the_critics_utility_when_it_is_higher() -> None:
    result = credited(plan(critic("good", "redundant", 0.8)), measured("good", "helps"))
    direction = result.direction(AGENT, "good")
    assert direction is not None and direction.verdict == "keep" and direction.utility == 0.8
    assert result.probe_evidence[0].contradicts  # a redundant verdict would have pruned it


def test_helps_leaves_a_critics_refine_alone() -> None:
    original = critic("good", "refine", 0.3)
    result = credited(plan(original), measured("good", "helps"))
    assert result.direction(AGENT, "good") == original
    [evidence] = result.probe_evidence
    assert evidence.decided_by == "critic" and not evidence.contradicts


def test_helps_against_a_negative_refine_keeps_the_refine_with_the_measured_utility() -> None:
    result = credited(plan(critic("good", "refine", -0.4)), measured("good", "helps"))
    direction = result.direction(AGENT, "good")
    assert direction is not None and direction.verdict == "refine"
    assert direction.utility == pytest.approx(0.4)
    [evidence] = result.probe_evidence
    assert evidence.contradicts and evidence.decided_by == "probe"
    assert evidence.critic_utility == -0.4


def test_helps_on_a_silent_critic_adds_a_keep_direction() -> None:
    result = credited(plan(), measured("good", "helps"))
    direction = result.direction(AGENT, "good")
    assert direction is not None and direction.verdict == "keep"
    assert direction.utility == pytest.approx(0.4)
    assert result.probe_evidence[0].decided_by == "probe"


@pytest.mark.parametrize("verdict", ["keep", "refine", "redundant", "low_utility"])
def test_no_effect_leaves_the_critics_direction(verdict: DirectionVerdict) -> None:
    original = critic("some", verdict, -0.2)
    result = credited(plan(original), measured("some", "no effect"))
    assert result.directions == [original]
    [evidence] = result.probe_evidence
    assert evidence.decided_by == "critic" and not evidence.contradicts
    assert evidence.critic_verdict == verdict and evidence.critic_utility == -0.2


def test_no_effect_on_a_silent_critic_adds_no_direction() -> None:
    result = credited(plan(), measured("some", "no effect"))
    assert result.directions == []
    assert result.probe_evidence[0].decided_by == "none"


def test_an_effect_without_a_pair_adds_evidence_only() -> None:
    unpaired = SkillEffect(agent=AGENT, skill="lost", effect=None, questions=0)
    original = critic("lost", "low_utility", -0.6)
    result = credited(plan(original), unpaired)
    assert result.directions == [original]
    [evidence] = result.probe_evidence
    assert evidence.effect is None and evidence.decided_by == "critic"


def test_evidence_keeps_the_critics_pre_probe_utility_and_verdict() -> None:
    aggregation = plan(critic("bad", "keep", 0.5), critic("good", "low_utility", -0.3))
    result = apply_probe_credit(
        aggregation, probe(measured("bad", "hurts"), measured("good", "helps"))
    )
    by_skill = {e.skill_id: e for e in result.probe_evidence}
    assert (by_skill["bad"].critic_utility, by_skill["bad"].critic_verdict) == (0.5, "keep")
    assert (by_skill["good"].critic_utility, by_skill["good"].critic_verdict) == (
        -0.3,
        "low_utility",
    )
    # The plan's directions changed; the input plan did not.
    assert aggregation.direction(AGENT, "bad") == critic("bad", "keep", 0.5)
    bad = result.direction(AGENT, "bad")
    assert bad is not None and bad.verdict == "low_utility"


def test_other_directions_and_plan_fields_pass_through() -> None:
    other = critic("other", "refine", 0.1)
    aggregation = plan(other).model_copy(update={"question_ids": ["q9"], "optimizer_calls": 2})
    result = apply_probe_credit(aggregation, probe(measured("bad", "hurts")))
    assert result.direction(AGENT, "other") == other
    assert result.question_ids == ["q9"] and result.optimizer_calls == 2
    assert [d.skill_id for d in result.directions] == ["other", "bad"]
