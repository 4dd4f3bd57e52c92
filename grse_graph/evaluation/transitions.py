"""Per-question transitions between two evaluations of the same questions (the paper's Table 3
view): each answer classified declined / wrong / correct under each library, the 3x3 table of
moves, and the paired difference of mean reward with a seeded bootstrap interval.

Outcome of one answer (`answer_outcome`):

- **declined**: the question failed (an exception; it scores 0), or the answer is empty or
  abstains: it contains one of the decline phrases of the analysis convention
  (`grse_graph.metrics.analysis.DECLINE_PHRASES`: "not mentioned", "unknown", ...);
- **correct**: token F1 >= 0.5 (`CORRECT_F1_THRESHOLD`, the convention of GUIDE §4) for tasks
  that report F1 (HotpotQA, LoCoMo and both halves of the demo task); for a task without F1,
  reward >= `correct_reward` (default 1.0: an exact answer);
- **wrong**: every other answer.

The reward difference is computed on the rewards themselves (not on the outcomes), question by
question, so the interval is that of the quantity training optimises.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, get_args

from pydantic import BaseModel, Field, computed_field

from grse_graph.errors import GrseError
from grse_graph.metrics.analysis import CORRECT_F1_THRESHOLD, answer_state

from .records import PredictionRecord
from .store import EvalFolder

Outcome = Literal["declined", "wrong", "correct"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
DEFAULT_RESAMPLES = 10_000
DEFAULT_LEVEL = 0.95
CORRECT_REWARD = 1.0
"""The reward that counts as correct on a task that reports no F1."""


class ComparisonError(GrseError):
    """Two evaluations cannot be compared question by question (different or no questions)."""


def answer_outcome(record: PredictionRecord, correct_reward: float = CORRECT_REWARD) -> Outcome:
    """declined / wrong / correct for one finished question (see the module docstring)."""
    if record.failed:
        return "declined"
    if record.state is not None:
        return record.state
    # No F1 on this task: the reward threshold plays the part of F1 >= 0.5.
    passed = record.reward >= correct_reward
    return answer_state(record.prediction, 1.0 if passed else 0.0)


class QuestionTransition(BaseModel):
    """One question under the library before (e.g. empty) and after (e.g. trained)."""

    question_id: str
    question: str
    answer: str
    category: str | None = None
    before: Outcome
    after: Outcome
    reward_before: float
    reward_after: float
    prediction_before: str
    prediction_after: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reward_change(self) -> float:
        """reward_after - reward_before."""
        return self.reward_after - self.reward_before


class TransitionTable(BaseModel):
    """counts[before][after]: how many questions moved from one outcome to another."""

    counts: dict[Outcome, dict[Outcome, int]]

    @classmethod
    def of(cls, transitions: Sequence[QuestionTransition]) -> TransitionTable:
        """The 3x3 table of `transitions` (every cell present, zeros included)."""
        counts: dict[Outcome, dict[Outcome, int]] = {
            before: dict.fromkeys(OUTCOMES, 0) for before in OUTCOMES
        }
        for t in transitions:
            counts[t.before][t.after] += 1
        return cls(counts=counts)

    def total(self, side: Literal["before", "after"], outcome: Outcome) -> int:
        """Questions with `outcome` under the library before (a row) or after (a column)."""
        if side == "before":
            return sum(self.counts[outcome].values())
        return sum(row[outcome] for row in self.counts.values())

    @computed_field  # type: ignore[prop-decorator]
    @property
    def fixed(self) -> int:
        """Questions that became correct (from declined or wrong)."""
        return self.counts["declined"]["correct"] + self.counts["wrong"]["correct"]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def broken(self) -> int:
        """Questions that were correct and are no longer."""
        return self.counts["correct"]["declined"] + self.counts["correct"]["wrong"]


class BootstrapInterval(BaseModel):
    """The mean of per-question paired differences and its percentile bootstrap interval."""

    difference: float
    low: float
    high: float
    level: float
    resamples: int
    seed: int
    questions: int


def _percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default) of already sorted values."""
    position = q * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    weight = position - lower
    return sorted_values[lower] * (1.0 - weight) + sorted_values[upper] * weight


def paired_bootstrap(
    before: Sequence[float],
    after: Sequence[float],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> BootstrapInterval:
    """Mean of (after - before) over paired questions, with a percentile bootstrap interval:
    `resamples` times, draw the questions with replacement and take the mean difference; the
    interval holds the central `level` share of those means. Deterministic for a given seed."""
    if len(before) != len(after):
        raise ComparisonError(
            f"paired bootstrap needs equal lengths, got {len(before)} and {len(after)}"
        )
    if not before:
        raise ComparisonError("paired bootstrap needs at least one question, got none")
    if resamples < 1:
        raise ComparisonError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ComparisonError(f"level must be in (0, 1), got {level}")
    diffs = [a - b for b, a in zip(before, after, strict=True)]
    n = len(diffs)
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1.0 - level) / 2.0
    return BootstrapInterval(
        difference=math.fsum(diffs) / n,
        low=_percentile(means, tail),
        high=_percentile(means, 1.0 - tail),
        level=level,
        resamples=resamples,
        seed=seed,
        questions=n,
    )


class LibraryComparison(BaseModel):
    """Two evaluations of the same questions: per-question transitions, their 3x3 table, both
    mean rewards, and the paired difference with its bootstrap interval."""

    before_label: str = "empty"
    after_label: str = "trained"
    correct_rule: str = Field(
        description="how `correct` was decided, for the printout (F1 or reward threshold)"
    )
    transitions: list[QuestionTransition]
    table: TransitionTable
    mean_before: float
    mean_after: float
    paired: BootstrapInterval


def compare_predictions(
    before: Sequence[PredictionRecord],
    after: Sequence[PredictionRecord],
    *,
    before_label: str = "empty",
    after_label: str = "trained",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> LibraryComparison:
    """Pair two evaluations by question id (in `before`'s order) and compare them.

    Both must hold the same questions; anything else is a `ComparisonError` naming the first
    question found on one side only (a comparison over different questions means nothing)."""
    after_by_id = {r.id: r for r in after}
    before_ids = [r.id for r in before]
    if len(set(before_ids)) != len(before_ids):
        raise ComparisonError(f"{before_label}: a question id appears twice")
    only_before = [i for i in before_ids if i not in after_by_id]
    only_after = [i for i in after_by_id if i not in set(before_ids)]
    if only_before or only_after:
        side, qid = (before_label, only_before[0]) if only_before else (after_label, only_after[0])
        raise ComparisonError(
            f"cannot compare {before_label} with {after_label}: question {qid!r} was answered "
            f"only under {side} ({len(only_before) + len(only_after)} unpaired question(s))"
        )
    if not before:
        raise ComparisonError(f"cannot compare {before_label} with {after_label}: no questions")
    transitions = []
    for b in before:
        a = after_by_id[b.id]
        transitions.append(
            QuestionTransition(
                question_id=b.id,
                question=b.question,
                answer=b.answer,
                category=b.category,
                before=answer_outcome(b),
                after=answer_outcome(a),
                reward_before=0.0 if b.failed else b.reward,
                reward_after=0.0 if a.failed else a.reward,
                prediction_before=b.prediction,
                prediction_after=a.prediction,
            )
        )
    rewards_before = [t.reward_before for t in transitions]
    rewards_after = [t.reward_after for t in transitions]
    uses_f1 = all(r.state is not None for r in (*before, *after) if not r.failed)
    rule = (
        f"correct = token F1 >= {CORRECT_F1_THRESHOLD}"
        if uses_f1
        else f"correct = F1 >= {CORRECT_F1_THRESHOLD} where reported, else reward >= "
        f"{CORRECT_REWARD}"
    )
    return LibraryComparison(
        before_label=before_label,
        after_label=after_label,
        correct_rule=rule + "; declined = failed, empty or abstaining answer; wrong otherwise",
        transitions=transitions,
        table=TransitionTable.of(transitions),
        mean_before=math.fsum(rewards_before) / len(transitions),
        mean_after=math.fsum(rewards_after) / len(transitions),
        paired=paired_bootstrap(rewards_before, rewards_after, resamples=resamples, seed=seed),
    )


def compare_folders(
    before: Path,
    after: Path,
    order: Sequence[str] | None = None,
    *,
    before_label: str = "empty",
    after_label: str = "trained",
    seed: int = 0,
) -> LibraryComparison:
    """`compare_predictions` on the `predictions.jsonl` of two evaluation folders.

    With `order` (question ids, e.g. the tested part of the split), exactly those questions
    are compared in that order, and each must have a prediction in both folders; without it,
    every prediction of both folders, in the before folder's file order."""
    if before_label == after_label:
        raise ComparisonError(f"both sides are labelled {before_label!r}; give two labels")
    sides = {
        before_label: EvalFolder(before).read_predictions(),
        after_label: EvalFolder(after).read_predictions(),
    }
    if order is not None:
        for label, records in sides.items():
            missing = [i for i in order if i not in records]
            if missing:
                raise ComparisonError(
                    f"{label}: question {missing[0]!r} has no prediction ({len(missing)} missing)"
                )
        sides = {label: {i: records[i] for i in order} for label, records in sides.items()}
    return compare_predictions(
        list(sides[before_label].values()),
        list(sides[after_label].values()),
        before_label=before_label,
        after_label=after_label,
        seed=seed,
    )
