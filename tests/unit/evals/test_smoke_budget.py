"""Every table's smoke size against the fake server, as the engine smoke test runs them (one
results folder, the fixtures, the smoke test's order): each table is produced with every cell
filled or FAILED (never a silent zero), and its calls stay under a ceiling. The ceilings are
the counts the smoke sizes make today: a count, not a timer, so a change that makes the CI
smoke slower fails here first (`python -m tests.unit.evals.smoke_budget` prints the tally)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.unit.evals.smoke_budget import ORDER, TableBudget, report, smoke_budgets

CEILINGS = {
    "table4_5": 49,
    "table1": 66,
    "table2": 71,  # 188 while it trained all four LoCoMo categories one by one
    "table3": 0,  # reads T1's and T2's runs
    "table6": 10,
    "table9": 1,
    "table10": 76,
    "table11": 0,  # reads T1's runs
}
"""Calls (each of `n` choices counted) per table at the smoke size, later tables reusing the
runs of earlier ones."""
CRITIC_AND_OPTIMIZER = 24
"""Critic and optimizer calls of all tables together (at cap 300 the costliest calls)."""
OUTPUTS = {"table4_5": ("table4", "table5")}


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, list[TableBudget]]]:
    out = tmp_path_factory.mktemp("smoke-budget")
    yield out, smoke_budgets(out)


def test_every_table_s_smoke_size_stays_under_its_call_ceiling(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    _, budgets = smoke
    tally = report(budgets)
    calls = {b.table: b.tally.total_calls() for b in budgets}
    assert list(calls) == list(ORDER)
    over = {table: n for table, n in calls.items() if n > CEILINGS[table]}
    assert not over, f"over the ceiling: {over}\n{tally}"
    judges = sum(b.tally.calls["critic"] + b.tally.calls["optimizer"] for b in budgets)
    assert judges <= CRITIC_AND_OPTIMIZER, tally
    assert calls["table1"] > 0 and calls["table2"] > 0  # the tables did run


def test_every_smoke_table_is_produced_with_every_cell_filled_or_failed(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    out, _ = smoke
    for table in ORDER:
        for name in OUTPUTS.get(table, (table,)):
            markdown = (out / f"{name}.md").read_text(encoding="utf-8")
            assert "SMOKE SIZE" in markdown or name == "table5", name
            reads_fixtures = table != "table4_5"
            assert ("DATA: invented smoke fixtures" in markdown) == reads_fixtures, name
            document = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
            cells = [cell for row in document["rows"] for cell in row["cells"].values()]
            assert cells, name
            for cell in cells:
                filled = cell["mean"] is not None or cell["text"] is not None
                assert filled != cell["failed"], (name, cell)
                if cell["failed"]:
                    assert cell["ours"].startswith("FAILED (") and cell["failures"], cell


def test_table2_trains_only_the_smoke_categories_and_says_so(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    out, budgets = smoke
    table2 = next(b for b in budgets if b.table == "table2")
    trained = sorted(run for run in table2.runs if "-grse-" in run or "-maskills-" in run)
    assert [run.split("-fake-")[0] for run in trained] == [
        "locomo-multi-hop-grse-default",
        "locomo-multi-hop-maskills-default",
    ]
    markdown = (out / "table2.md").read_text(encoding="utf-8")
    assert "SMOKE SIZE: LoCoMo trained per category on multi-hop only" in markdown
    document = json.loads((out / "table2.json").read_text(encoding="utf-8"))
    grse = next(row for row in document["rows"] if row["label"] == "GRSE")
    assert grse["cells"]["fake|temporal:f1"]["text"] == "not trained at the smoke size"
    assert grse["cells"]["fake|multi-hop:f1"]["mean"] is not None
    empty = next(row for row in document["rows"] if row["label"] == "Empty library")
    assert all(cell["mean"] is not None for cell in empty["cells"].values())
    table3 = json.loads((out / "table3.json").read_text(encoding="utf-8"))
    texts = {row["label"]: row["cells"]["D->C"]["text"] for row in table3["rows"]}
    assert texts["LoCoMo temporal [fake]"] == "not trained at the smoke size"
    assert texts["LoCoMo multi-hop [fake]"] is None
