"""Group-relative advantages and the DAPO filter."""

from __future__ import annotations

import math

import pytest

from grse_graph.methods.grse.advantages import group_advantages, keep_group


def test_advantages_use_population_std() -> None:
    rewards = [1.0, 0.0, 0.0, 1.0]
    # mean 0.5, population std 0.5 (sample std would be ~0.577)
    adv = group_advantages(rewards, eps=1e-6)
    assert adv[0] == pytest.approx(0.5 / (0.5 + 1e-6))
    assert adv[1] == pytest.approx(-0.5 / (0.5 + 1e-6))
    assert sum(adv) == pytest.approx(0.0)


def test_uneven_group() -> None:
    rewards = [0.2, 0.4, 0.9]
    mean = sum(rewards) / 3
    sigma = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)
    assert group_advantages(rewards) == pytest.approx(
        [(r - mean) / (sigma + 1e-6) for r in rewards]
    )


def test_equal_rewards_give_zeros() -> None:
    assert group_advantages([0.7, 0.7, 0.7, 0.7]) == [0.0, 0.0, 0.0, 0.0]


def test_sigma_at_or_below_epsilon_gives_zeros() -> None:
    # population std of [0, 2e-3] is 1e-3
    assert group_advantages([0.0, 2e-3], eps=1e-3) == [0.0, 0.0]
    assert group_advantages([0.0, 2e-3], eps=1e-4) != [0.0, 0.0]


def test_single_rollout_group() -> None:
    assert group_advantages([0.3]) == [0.0]


def test_empty_group_is_an_error() -> None:
    with pytest.raises(ValueError):
        group_advantages([])


def test_equal_groups_kept_by_default_dropped_by_dapo() -> None:
    assert keep_group([1.0, 1.0, 1.0, 1.0], dapo_filter=False)
    assert not keep_group([1.0, 1.0, 1.0, 1.0], dapo_filter=True)
    assert not keep_group([0.0, 0.0], dapo_filter=True)
    assert keep_group([0.0, 1.0, 0.0, 0.0], dapo_filter=True)


def test_dapo_filter_keeps_single_rollout_groups() -> None:
    assert keep_group([0.0], dapo_filter=True)
