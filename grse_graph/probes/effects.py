"""A skill's measured effect from a probe's runs: paired differences and a bootstrap interval.

Per question, a skill's contrast is the mean reward of the runs where it was present minus the
mean reward of the runs where it was masked (leave-one-out: the full run minus the run without
it). The effect is the mean contrast over questions; its interval is the percentile bootstrap
over questions, so the unit of evidence is a question, as in the paired test comparison.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from statistics import fmean
from typing import Literal

from pydantic import BaseModel, Field

from .design import MIN_PROBE_QUESTIONS, ProbeDesign, SkillRef

EffectVerdict = Literal["helps", "hurts", "no effect"]


class ProbeOutcome(BaseModel):
    """What one finished run contributes: its question, masked skills and reward."""

    question_id: str
    masked: tuple[SkillRef, ...]
    reward: float


class SkillEffect(BaseModel):
    """One skill's measured effect on reward (library with it minus library without it)."""

    agent: str
    skill: str
    effect: float | None = Field(description="mean paired reward difference; None: no pair")
    low: float | None = None
    high: float | None = None
    questions: int = Field(description="questions with a paired difference")
    invocations: int | None = Field(
        default=None, description="loads seen in the full runs; None where skills are inline"
    )
    verdict: EffectVerdict = "no effect"

    @property
    def ref(self) -> SkillRef:
        """The skill as a `SkillRef`."""
        return SkillRef(agent=self.agent, skill=self.skill)


def question_contrasts(
    outcomes: Sequence[ProbeOutcome], ref: SkillRef, design: ProbeDesign
) -> list[float]:
    """Per question (in first-seen order), present mean minus masked mean, where the question
    has runs of both kinds. Leave-one-out compares the full run with the run without `ref`
    only (runs that mask another skill are not the skill's pair); random masks compare every
    run with it against every run without it."""
    by_question: dict[str, tuple[list[float], list[float]]] = {}
    for outcome in outcomes:
        present, masked = by_question.setdefault(outcome.question_id, ([], []))
        if ref in outcome.masked:
            masked.append(outcome.reward)
        elif design == "random_masks" or not outcome.masked:
            present.append(outcome.reward)
    return [fmean(p) - fmean(m) for p, m in by_question.values() if p and m]


def bootstrap_interval(
    values: Sequence[float], *, confidence: float, resamples: int, seed: int
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of `values` (seeded, so repeatable)."""
    if not values:
        raise ValueError("no values to bootstrap")
    rng = random.Random(seed)
    n = len(values)
    means = sorted(fmean(rng.choices(values, k=n)) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0
    low_index = int(tail * (resamples - 1))
    high_index = math.ceil((1.0 - tail) * (resamples - 1))
    return means[low_index], means[high_index]


def verdict_of(low: float | None, high: float | None) -> EffectVerdict:
    """helps when the whole interval is above 0, hurts when below, else no effect."""
    if low is None or high is None:
        return "no effect"
    if low > 0.0:
        return "helps"
    if high < 0.0:
        return "hurts"
    return "no effect"


def skill_effect(
    outcomes: Sequence[ProbeOutcome],
    ref: SkillRef,
    *,
    design: ProbeDesign,
    confidence: float,
    resamples: int,
    seed: int,
    invocations: int | None = None,
) -> SkillEffect:
    """The measured effect of one skill with its interval and verdict."""
    contrasts = question_contrasts(outcomes, ref, design)
    if not contrasts:
        return SkillEffect(
            agent=ref.agent, skill=ref.skill, effect=None, questions=0, invocations=invocations
        )
    low, high = bootstrap_interval(contrasts, confidence=confidence, resamples=resamples, seed=seed)
    return SkillEffect(
        agent=ref.agent,
        skill=ref.skill,
        effect=fmean(contrasts),
        low=low,
        high=high,
        questions=len(contrasts),
        invocations=invocations,
        # One question's difference is an anecdote, whatever its bootstrap says.
        verdict=verdict_of(low, high) if len(contrasts) >= MIN_PROBE_QUESTIONS else "no effect",
    )
