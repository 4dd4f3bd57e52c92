"""§9.4: retention reasons, priorities, failure counts across rounds, ranking and cap."""

from __future__ import annotations

import pytest

from grse_graph.methods.skillmas.retention import failure_key, retain
from grse_graph.methods.skillmas.trace import VerifiedTrace


def trace(rid: str, success: bool, **fields: object) -> VerifiedTrace:
    base: dict[str, object] = {
        "rollout_id": rid,
        "question_id": rid,
        "task_type": "single-hop",
        "task": "q",
        "success": success,
        "executors": ["retriever", "reasoner"],
        "error_message": "" if success else "wrong",
    }
    return VerifiedTrace.model_validate({**base, **fields})


def test_repeated_near_miss_mismatch_failure_priority() -> None:
    failure = trace(
        "f2",
        False,
        score=0.3,
        tool_calls=5,
        selected={"reasoner": ["a", "b"]},
        used={"reasoner": ["a"]},
    )
    seen = {failure_key(failure): 1}
    kept = retain([failure], seen)
    (item,) = kept.items
    assert item.reasons == ["repeated_failure", "near_miss", "retrieval_execution_mismatch"]
    assert item.priority == pytest.approx(4 + 3 + 2 + 1 + 5 / 20)
    assert kept.failure_counts[failure_key(failure)] == 2


def test_success_without_budget_is_reusable_with_priority_one() -> None:
    (item,) = retain([trace("s", True, score=1.0)], {}).items
    assert item.reasons == ["reusable_success"]
    assert item.priority == 1.0


def test_first_failure_is_not_repeated_and_counts_persist() -> None:
    first = trace("f1", False, score=0.0)
    kept = retain([first], {})
    assert kept.items == []  # no reason: F1 0 is not a near miss, first of its key
    again = retain([trace("f2", False, score=0.0)], kept.failure_counts)
    assert again.items[0].reasons == ["repeated_failure"]


def test_step_budget_rules_and_error_key_separates_states() -> None:
    slow_win = trace("s", True, steps=3, max_steps=3)
    assert retain([slow_win], {}).items == []  # 3/3 > 0.6: not reusable
    near = trace("f", False, score=0.0, steps=3, max_steps=3)
    assert retain([near], {}).items[0].reasons == ["near_miss"]
    declined = trace("d", False, error_message="declined")
    assert failure_key(declined) != failure_key(near)


def test_sorted_by_priority_stable_and_capped() -> None:
    traces = [trace(f"s{i}", True) for i in range(3)] + [trace("f", False, score=0.5)]
    kept = retain(traces, {}, max_retained=2)
    assert [i.trace.rollout_id for i in kept.items] == ["f", "s0"]
