"""§9.4: pool decisions on this round's verified uses."""

from __future__ import annotations

from grse_graph.methods.skillmas.pool import evaluate_shadow
from grse_graph.methods.skillmas.trace import VerifiedTrace


def uses(successes: list[bool], skill: str = "new") -> list[VerifiedTrace]:
    return [
        VerifiedTrace(
            rollout_id=f"r{i}",
            question_id=f"q{i}",
            task_type="t",
            task="q",
            success=ok,
            used={"reasoner": [skill]},
        )
        for i, ok in enumerate(successes)
    ]


def test_two_uses_hold() -> None:
    decision = evaluate_shadow("reasoner", "new", uses([True, True]))
    assert decision.decision == "hold"
    assert "1 more" in decision.reason


def test_three_uses_two_successes_promote() -> None:
    assert evaluate_shadow("reasoner", "new", uses([True, True, False])).decision == "promote"


def test_four_uses_two_successes_hold() -> None:
    decision = evaluate_shadow("reasoner", "new", uses([True, False, True, False]))
    assert decision.decision == "hold"
    assert decision.success_rate == 0.5


def test_uses_of_another_agent_or_skill_do_not_count() -> None:
    assert evaluate_shadow("retriever", "new", uses([True] * 3)).uses == 0
    assert evaluate_shadow("reasoner", "other", uses([True] * 3)).uses == 0
