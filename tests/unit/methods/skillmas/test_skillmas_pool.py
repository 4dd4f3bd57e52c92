"""§9.4: pool decisions on this round's verified uses."""

from __future__ import annotations

from grse_graph.methods.skillmas.evolution import evaluate_shadow
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
    decision, _ = evaluate_shadow("reasoner", "new", uses([True, True]))
    assert decision.decision == "hold"
    assert "1 more" in decision.reason


def test_three_uses_two_successes_promote() -> None:
    assert evaluate_shadow("reasoner", "new", uses([True, True, False]))[0].decision == "promote"


def test_four_uses_two_successes_hold() -> None:
    decision, _ = evaluate_shadow("reasoner", "new", uses([True, False, True, False]))
    assert decision.decision == "hold"
    assert (decision.successes, decision.uses) == (2, 4)


def test_uses_of_another_agent_or_skill_do_not_count() -> None:
    assert evaluate_shadow("retriever", "new", uses([True] * 3))[0].uses == 0
    assert evaluate_shadow("reasoner", "other", uses([True] * 3))[0].uses == 0


# Row 18: cumulative counting and disable after m failed evaluations.


def test_cumulative_counting_promotes_on_uses_spread_over_rounds() -> None:
    first, tally = evaluate_shadow("reasoner", "new", uses([True, True]), counting="cumulative")
    assert first.decision == "hold" and tally.uses == 2 and tally.successes == 2
    second, tally = evaluate_shadow(
        "reasoner", "new", uses([False]), counting="cumulative", tally=tally
    )
    assert (second.uses, second.successes, second.decision) == (3, 2, "promote")
    # the same second round counted per round (the code) holds: 1 use
    per_round, _ = evaluate_shadow("reasoner", "new", uses([False]), tally=tally)
    assert (per_round.uses, per_round.decision) == (1, "hold")


def test_disable_after_m_failed_evaluations() -> None:
    bad = uses([True, False, False])
    decision, tally = evaluate_shadow("reasoner", "new", bad, disable_after=2)
    assert decision.decision == "hold" and tally.failed_evaluations == 1
    decision, tally = evaluate_shadow("reasoner", "new", bad, disable_after=2, tally=tally)
    assert decision.decision == "disable" and decision.failed_evaluations == 2
    # too few uses is not a failed evaluation; without disable_after a skill is held forever
    few, tally = evaluate_shadow("reasoner", "new", bad[:1], disable_after=1)
    assert few.decision == "hold" and tally.failed_evaluations == 0
    for _ in range(5):
        held, tally = evaluate_shadow("reasoner", "new", bad, tally=tally)
        assert held.decision == "hold"
