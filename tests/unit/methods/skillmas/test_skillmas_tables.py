"""§9.4: the count-based update, initial values and read-outs of Q^s and Q^a."""

from __future__ import annotations

import pytest

from grse_graph.methods.skillmas.tables import Entry, ExecutorUtilityTable, SkillUtilityTable


def test_rewards_1_0_1_give_running_means() -> None:
    entry = Entry()
    values = []
    for reward in (1.0, 0.0, 1.0):
        entry = entry.updated(reward)
        values.append(entry.q)
    assert values == pytest.approx([1.0, 0.5, 2 / 3], abs=1e-9)
    assert entry.n == 3


def test_skill_table_updates_global_task_and_agent_entries() -> None:
    table = SkillUtilityTable()
    for reward in (1.0, 0.0, 1.0):
        table = table.update("s", "bridge", "reasoner", reward)
    record = table.skills["s"]
    assert record.overall.q == pytest.approx(0.667, abs=1e-3)
    assert record.tasks["bridge"].q == pytest.approx(0.667, abs=1e-3)
    assert record.agents["reasoner"].n == 3
    assert table.total_updates == 3
    # a new task entry starts at the just-updated global q, then moves with alpha = 1
    table = table.update("s", "comparison", "reasoner", 0.0)
    assert table.skills["s"].tasks["comparison"].q == 0.0
    assert table.combined("s", "bridge", "retriever") == pytest.approx(
        0.5 * 0.5 + 0.3 * (2 / 3) + 0.2 * 0.5
    )


def test_new_skill_starts_at_mean_global_q_of_used_skills() -> None:
    table = SkillUtilityTable()
    assert table.initialize("new").skills["new"].overall.q == 0.5
    table = table.update("a", "t", "x", 1.0).update("b", "t", "x", 0.0).update("b", "t", "x", 1.0)
    table = table.initialize("fresh")  # a: 1.0, b: 0.5 -> 0.75
    assert table.skills["fresh"].overall.q == pytest.approx(0.75)
    assert table.skills["fresh"].overall.n == 0
    assert table.combined("unknown", "t", "x") == 0.5


def test_ucb_is_zero_before_any_update_then_capped() -> None:
    table = SkillUtilityTable().initialize("s")
    assert table.ucb("s") == 0.0
    table = table.update("other", "t", "x", 1.0)
    assert table.ucb("s") == pytest.approx(0.15)


def test_executor_readout_uses_task_entry_from_three_updates() -> None:
    table = ExecutorUtilityTable()
    table = table.update("a", "t", 1.0).update("a", "t", 0.0)
    # 2 task updates: the global q alone
    assert table.value("a", "t") == pytest.approx(0.5)
    table = table.update("a", "u", 1.0)  # global 2/3, task t still 0.5 (n=2)
    assert table.value("a", "t") == pytest.approx(2 / 3)
    table = table.update("a", "t", 1.0)  # task t: 2/3 (n=3), global 3/4
    assert table.value("a", "t") == pytest.approx(0.6 * (2 / 3) + 0.4 * 0.75)
    assert table.value("nobody", "t") == 0.5


def test_extension_agent_initialisation_and_off_target_penalty() -> None:
    table = ExecutorUtilityTable().initialize_extension("spec", 0.4, ["t"])
    record = table.agents["spec"]
    assert record.overall.q == pytest.approx(0.5)
    assert record.tasks["t"].q == pytest.approx(0.6)
    assert table.value("spec", "t") == pytest.approx(0.5)  # task entry untrusted (n = 0)
    assert table.value("spec", "other") == pytest.approx(0.25)  # x0.5 off target


def test_task_baseline_falls_back_to_global_baseline() -> None:
    table = ExecutorUtilityTable().update("a", "t", 0.0).update("b", "t", 1.0)
    assert table.task_baseline("t") == pytest.approx(0.5)
    table = table.update("a", "t", 0.0)
    assert table.task_baseline("t") == pytest.approx((0.0 + 1.0) / 2)
    assert table.task_baseline("unseen") == pytest.approx(table.baseline())
    assert ExecutorUtilityTable().baseline() == 0.5
