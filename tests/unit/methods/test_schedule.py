"""Operator schedule Omega(t)."""

from __future__ import annotations

import pytest

from grse_graph.methods.operators.schedule import OperatorSchedule


def test_paper_defaults() -> None:
    s = OperatorSchedule()
    assert s.active(1) == ["refine", "induce"]
    assert s.active(2) == ["refine", "consolidate", "prune", "induce"]
    assert s.active(3) == ["refine", "induce"]


def test_per_task_prune_period() -> None:
    hotpot, locomo = OperatorSchedule.for_task("hotpotqa"), OperatorSchedule.for_task("locomo")
    assert [t for t in range(1, 7) if "prune" in hotpot.active(t)] == [2, 4, 6]
    assert [t for t in range(1, 7) if "prune" in locomo.active(t)] == [3, 6]
    assert [t for t in range(1, 7) if "consolidate" in locomo.active(t)] == [2, 4, 6]


def test_zero_disables_an_operator() -> None:
    assert "induce" not in OperatorSchedule(induce_every=0).active(1)


def test_iterations_are_one_based() -> None:
    with pytest.raises(ValueError):
        OperatorSchedule().active(0)
