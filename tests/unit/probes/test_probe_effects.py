"""A skill's measured effect from hand-made probe outcomes: paired contrasts per question, the
bootstrap interval and the verdict (no model, no engine)."""

from __future__ import annotations

from statistics import fmean

import pytest

from grse_graph.probes import (
    ProbeDesign,
    ProbeOutcome,
    SkillEffect,
    SkillRef,
    bootstrap_interval,
    skill_effect,
)
from grse_graph.probes.effects import question_contrasts

A = SkillRef(agent="reasoner", skill="a")
B = SkillRef(agent="reasoner", skill="b")
C = SkillRef(agent="retriever", skill="c")


def run(question: str, reward: float, *masked: SkillRef) -> ProbeOutcome:
    return ProbeOutcome(question_id=question, masked=masked, reward=reward)


def effect_of(
    outcomes: list[ProbeOutcome], ref: SkillRef, design: ProbeDesign = "leave_one_out"
) -> SkillEffect:
    return skill_effect(outcomes, ref, design=design, confidence=0.95, resamples=500, seed=0)


def leave_one_out(contrasts: list[float]) -> list[ProbeOutcome]:
    """Per question a full run of reward 0.5 and a run without A of 0.5 - contrast."""
    outcomes = []
    for i, contrast in enumerate(contrasts):
        outcomes += [run(f"q{i}", 0.5), run(f"q{i}", 0.5 - contrast, A)]
    return outcomes


def test_leave_one_out_pairs_the_full_run_with_the_run_without_the_skill() -> None:
    outcomes = [
        run("q1", 1.0),
        run("q1", 0.0, A),
        run("q1", 0.0, B),  # masks another skill: not A's pair
        run("q2", 0.5),
        run("q2", 0.0, A),
        run("q2", 1.0, B),
    ]
    assert question_contrasts(outcomes, A, "leave_one_out") == [1.0, 0.5]
    assert question_contrasts(outcomes, B, "leave_one_out") == [1.0, -0.5]


def test_random_masks_compare_the_present_mean_with_the_masked_mean_per_question() -> None:
    outcomes = [
        run("q1", 1.0),
        run("q1", 0.0, A),
        run("q1", 0.0, A, B),
        run("q1", 1.0, B),
        run("q2", 0.6, C),
        run("q2", 0.2, A, C),
    ]
    # q1, A: present (1.0, 1.0) - masked (0.0, 0.0); q2, A: 0.6 - 0.2.
    assert question_contrasts(outcomes, A, "random_masks") == pytest.approx([1.0, 0.4])
    # q1, B: present (1.0, 0.0) - masked (0.0, 1.0); in q2 B is never masked.
    assert question_contrasts(outcomes, B, "random_masks") == [0.0]
    # C is never present in q2, never masked in q1: no pair.
    assert question_contrasts(outcomes, C, "random_masks") == []


def test_questions_come_in_first_seen_order() -> None:
    outcomes = [run("z", 0.5, A), run("a", 1.0), run("a", 0.0, A), run("z", 1.0)]
    assert question_contrasts(outcomes, A, "leave_one_out") == [0.5, 1.0]


def test_the_effect_is_the_mean_contrast_with_its_interval() -> None:
    effect = effect_of(leave_one_out([0.5, 1.0, 0.5]), A)
    assert effect.effect == pytest.approx(2 / 3)
    assert effect.questions == 3 and effect.low is not None and effect.high is not None
    assert 0.5 - 1e-9 <= effect.low <= 2 / 3 <= effect.high <= 1.0 + 1e-9
    assert (effect.agent, effect.skill, effect.ref) == ("reasoner", "a", A)


def test_a_reliably_positive_effect_helps() -> None:
    assert effect_of(leave_one_out([0.5, 1.0, 0.5]), A).verdict == "helps"


def test_a_reliably_negative_effect_hurts() -> None:
    assert effect_of(leave_one_out([-0.5, -0.5, -0.25]), A).verdict == "hurts"


def test_an_interval_across_zero_is_no_effect() -> None:
    effect = effect_of(leave_one_out([0.5, -0.5, 0.5, -0.5]), A)
    assert effect.effect == pytest.approx(0.0) and effect.verdict == "no effect"
    assert effect.low is not None and effect.high is not None and effect.low < 0 < effect.high


def test_a_single_question_is_no_effect_whatever_its_difference() -> None:
    effect = effect_of(leave_one_out([0.5]), A)
    assert effect.effect == pytest.approx(0.5) and effect.questions == 1
    assert effect.low == pytest.approx(0.5) and effect.high == pytest.approx(0.5)
    assert effect.verdict == "no effect"


def test_a_skill_without_a_pair_has_no_effect() -> None:
    effect = effect_of([run("q1", 1.0), run("q1", 0.0, B), run("q2", 1.0)], A)
    assert effect.effect is None and effect.low is None and effect.high is None
    assert effect.questions == 0 and effect.verdict == "no effect"


def test_invocations_are_carried_through() -> None:
    assert effect_of(leave_one_out([0.5, 0.5]), A).invocations is None
    outcomes = leave_one_out([0.5, 0.5])
    effect = skill_effect(
        outcomes, A, design="leave_one_out", confidence=0.9, resamples=100, seed=0, invocations=3
    )
    assert effect.invocations == 3


VALUES = [0.0, 1.0, 0.5, 1.0, -0.5, 0.25, 1.0, 0.0]


def test_the_bootstrap_is_seeded_and_repeatable() -> None:
    first = bootstrap_interval(VALUES, confidence=0.95, resamples=1000, seed=3)
    assert bootstrap_interval(VALUES, confidence=0.95, resamples=1000, seed=3) == first
    assert bootstrap_interval(VALUES, confidence=0.95, resamples=1000, seed=4) != first


def test_the_bootstrap_interval_contains_the_mean() -> None:
    low, high = bootstrap_interval(VALUES, confidence=0.95, resamples=1000, seed=0)
    assert low < fmean(VALUES) < high
    assert min(VALUES) <= low and high <= max(VALUES)


def test_the_bootstrap_of_constant_values_is_a_point() -> None:
    assert bootstrap_interval([0.25] * 6, confidence=0.95, resamples=200, seed=0) == (0.25, 0.25)


def test_the_bootstrap_interval_widens_with_spread() -> None:
    def width(values: list[float]) -> float:
        low, high = bootstrap_interval(values, confidence=0.95, resamples=1000, seed=0)
        return high - low

    assert width([0.4, 0.6] * 5) < width([0.0, 1.0] * 5)


def test_a_higher_confidence_gives_a_wider_interval() -> None:
    narrow = bootstrap_interval(VALUES, confidence=0.5, resamples=1000, seed=0)
    wide = bootstrap_interval(VALUES, confidence=0.99, resamples=1000, seed=0)
    assert wide[0] <= narrow[0] and narrow[1] <= wide[1] and wide != narrow


def test_the_bootstrap_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError, match="no values"):
        bootstrap_interval([], confidence=0.95, resamples=100, seed=0)
