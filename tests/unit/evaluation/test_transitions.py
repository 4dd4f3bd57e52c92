"""Per-question transitions between two evaluations, the 3x3 table and the paired bootstrap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grse_graph.evaluation.records import PredictionRecord
from grse_graph.evaluation.store import EvalFolder
from grse_graph.evaluation.transitions import (
    ComparisonError,
    TransitionTable,
    answer_outcome,
    compare_folders,
    compare_predictions,
    paired_bootstrap,
)


def record(qid: str, prediction: str, reward: float, **kw: Any) -> PredictionRecord:
    """A record of a task with F1 (state from F1 >= 0.5 unless given)."""
    f1 = kw.pop("f1", reward)
    state = kw.pop("state", None)
    if state is None and not kw.get("failed"):
        state = "correct" if f1 >= 0.5 else "wrong"
    metrics = {} if kw.get("failed") else {"f1": f1}
    return PredictionRecord(
        id=qid,
        question=f"question {qid}",
        answer="gold",
        prediction=prediction,
        reward=reward,
        metrics=metrics,
        state=state,
        **kw,
    )


def test_outcome_follows_the_recorded_state_and_a_failure_is_declined() -> None:
    assert answer_outcome(record("a", "gold", 1.0)) == "correct"
    assert answer_outcome(record("a", "gold-ish", 0.5)) == "correct"  # F1 >= 0.5
    assert answer_outcome(record("a", "other", 0.2)) == "wrong"
    assert answer_outcome(record("a", "not mentioned", 0.0, state="declined")) == "declined"
    failed = record("a", "", 0.0, failed=True, error="RuntimeError: boom")
    assert answer_outcome(failed) == "declined"


def test_outcome_without_f1_uses_the_reward_threshold_and_the_decline_phrases() -> None:
    def no_f1(prediction: str, reward: float) -> PredictionRecord:
        return PredictionRecord(
            id="q", question="q", answer="blue", prediction=prediction, reward=reward
        )

    assert answer_outcome(no_f1("blue", 1.0)) == "correct"
    assert answer_outcome(no_f1("bluish", 0.7)) == "wrong"
    assert answer_outcome(no_f1("bluish", 0.7), correct_reward=0.6) == "correct"
    assert answer_outcome(no_f1("", 0.0)) == "declined"
    assert answer_outcome(no_f1("The colour is unknown.", 0.0)) == "declined"


def _two_runs() -> tuple[list[PredictionRecord], list[PredictionRecord]]:
    before = [
        record("q1", "", 0.0, state="declined"),  # declined -> correct
        record("q2", "red", 0.0),  # wrong -> correct
        record("q3", "red", 0.1),  # wrong -> wrong
        record("q4", "gold", 1.0),  # correct -> wrong
        record("q5", "gold", 1.0),  # correct -> correct
        record("q6", "x", 0.0, failed=True, error="E: x"),  # declined (failed) -> declined
    ]
    after = [
        record("q6", "unknown", 0.0, state="declined"),
        record("q5", "gold", 1.0),
        record("q4", "red", 0.2),
        record("q3", "red", 0.3),
        record("q2", "gold", 1.0),
        record("q1", "gold", 0.8),
    ]
    return before, after


def test_known_inputs_give_the_known_table_means_and_order() -> None:
    before, after = _two_runs()
    c = compare_predictions(before, after, resamples=200)
    assert [t.question_id for t in c.transitions] == ["q1", "q2", "q3", "q4", "q5", "q6"]
    assert c.table.counts == {
        "declined": {"declined": 1, "wrong": 0, "correct": 1},
        "wrong": {"declined": 0, "wrong": 1, "correct": 1},
        "correct": {"declined": 0, "wrong": 1, "correct": 1},
    }
    assert (c.table.fixed, c.table.broken) == (2, 1)
    assert [c.table.total("before", o) for o in ("declined", "wrong", "correct")] == [2, 2, 2]
    assert [c.table.total("after", o) for o in ("declined", "wrong", "correct")] == [1, 2, 3]
    assert c.mean_before == pytest.approx(2.1 / 6)
    assert c.mean_after == pytest.approx(3.3 / 6)
    assert c.paired.difference == pytest.approx(1.2 / 6)
    assert c.transitions[3].reward_change == pytest.approx(-0.8)
    assert "F1 >= 0.5" in c.correct_rule


def test_unpaired_or_empty_evaluations_are_refused() -> None:
    before, after = _two_runs()
    with pytest.raises(ComparisonError, match="'q6' was answered only under empty"):
        compare_predictions(before, after[1:])
    with pytest.raises(ComparisonError, match="no questions"):
        compare_predictions([], [])
    with pytest.raises(ComparisonError, match="twice"):
        compare_predictions([*before, before[0]], after)


def test_bootstrap_interval_contains_the_point_estimate_and_is_seeded() -> None:
    before = [0.0, 0.2, 0.5, 1.0, 0.3, 0.0, 0.7, 0.1]
    after = [1.0, 0.2, 0.4, 1.0, 0.9, 0.0, 0.7, 0.6]
    first = paired_bootstrap(before, after, resamples=2000, seed=7)
    assert first.difference == pytest.approx(sum(after) / 8 - sum(before) / 8)
    assert first.low <= first.difference <= first.high
    assert first.low < first.high
    assert paired_bootstrap(before, after, resamples=2000, seed=7) == first
    other = paired_bootstrap(before, after, resamples=2000, seed=8)
    assert (other.low, other.high) != (first.low, first.high)
    wider = paired_bootstrap(before, after, resamples=2000, seed=7, level=0.99)
    assert wider.low <= first.low and wider.high >= first.high


def test_bootstrap_of_a_constant_difference_is_that_difference() -> None:
    result = paired_bootstrap([0.0, 0.5, 0.25], [0.5, 1.0, 0.75], resamples=50)
    assert (result.low, result.difference, result.high) == pytest.approx((0.5, 0.5, 0.5))


@pytest.mark.parametrize(
    ("before", "after", "options", "message"),
    [
        ([0.0], [0.0, 1.0], {}, "equal lengths"),
        ([], [], {}, "at least one question"),
        ([0.0], [1.0], {"resamples": 0}, "resamples"),
        ([0.0], [1.0], {"level": 1.0}, "level"),
    ],
)
def test_bootstrap_refuses_bad_input(
    before: list[float], after: list[float], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ComparisonError, match=message):
        paired_bootstrap(before, after, **options)


def test_transition_table_of_nothing_has_every_cell_at_zero() -> None:
    table = TransitionTable.of([])
    assert all(v == 0 for row in table.counts.values() for v in row.values())
    assert len(table.counts) == 3 and all(len(row) == 3 for row in table.counts.values())


def _folder(path: Path, records: list[PredictionRecord]) -> Path:
    folder = EvalFolder(path)
    path.mkdir(parents=True)
    for r in records:
        folder.append(r)
    return path


def test_compare_folders_takes_the_given_questions_in_the_given_order(tmp_path: Path) -> None:
    before, after = _two_runs()
    b = _folder(tmp_path / "empty", before)
    a = _folder(tmp_path / "final", after)
    c = compare_folders(b, a, ["q5", "q1"], seed=3)
    assert [t.question_id for t in c.transitions] == ["q5", "q1"]
    assert (c.paired.seed, c.paired.questions) == (3, 2)
    assert len(compare_folders(b, a).transitions) == 6
    with pytest.raises(ComparisonError, match="trained: question 'q9' has no prediction"):
        compare_folders(_folder(tmp_path / "more", [*before, record("q9", "", 0.0)]), a, ["q9"])
    with pytest.raises(ComparisonError, match="two labels"):
        compare_folders(b, a, before_label="x", after_label="x")
