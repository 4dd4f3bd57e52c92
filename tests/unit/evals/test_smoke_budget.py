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

from grse_graph.reproduce.paper import load_paper
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.table import NOT_RUN_AT_SIZE
from tests.unit.evals.smoke_budget import ORDER, TableBudget, report, smoke_budgets

CEILINGS = {
    "table4_5": 49,
    "table1": 66,
    "table2": 71,  # 188 while it trained all four LoCoMo categories one by one
    "table3": 0,  # reads T1's and T2's runs
    "table6": 10,  # both methods' transfers (8 calls)
    "table9": 6,  # GRSE, w/o structure and MASkills on both tasks: one 32-token call a skill
    "table10": 76,
    "table11": 0,  # reads T1's runs
}
"""Calls (each of `n` choices counted) per table at the smoke size, later tables reusing the
runs of earlier ones."""
CRITIC_AND_OPTIMIZER = 31
"""Critic and optimizer calls of all tables together (at cap 160 the costliest calls; Table
9's typing calls, 6 of them, are capped at 32 tokens)."""
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
            reads_fixtures = bool(set(TABLES[table].tasks) - {"demo"})
            assert ("DATA: invented smoke fixtures" in markdown) == reads_fixtures, name
            document = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
            cells = [cell for row in document["rows"] for cell in row["cells"].values()]
            assert cells, name
            header = "\n".join(document["header"])
            for row in document["rows"]:
                assert set(row["cells"]) == {c["key"] for c in document["columns"]}, name
                for cell in row["cells"].values():
                    filled = cell["mean"] is not None or cell["text"] is not None
                    if cell["not_run"] is not None:
                        # Not run at the smoke size: not a failure, and listed in the header.
                        assert not filled and not cell["failed"], (name, cell)
                        assert f"{NOT_RUN_AT_SIZE}: " in header, name
                        assert row["label"] in header.split(f"{NOT_RUN_AT_SIZE}: ")[1], name
                        continue
                    assert filled != cell["failed"], (name, cell)
                    if cell["failed"]:
                        assert cell["ours"].startswith("FAILED (") and cell["failures"], cell


def test_every_smoke_table_has_the_paper_s_rows_and_columns_of_its_actor(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    out, _ = smoke
    for name in ORDER:
        if name == "table4_5":
            continue  # Tables 4 and 5 lay out their own designs (t45_repair)
        layout = load_paper(name).layout
        document = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        # One actor (the fake server's) stands beside the paper's first: Qwen3.8.
        rows = [r.key for r in layout.rows if "Gemma4" not in r.key]
        columns = [c.key for c in layout.columns if not c.key.startswith("Gemma4")]
        assert [r["key"] for r in document["rows"] if r["key"]] == rows, name
        assert [c["key"] for c in document["columns"] if c["paper"]] == columns, name


def test_table2_trains_only_the_smoke_categories_and_says_so(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    out, budgets = smoke
    table2 = next(b for b in budgets if b.table == "table2")
    trained = sorted(run for run in table2.runs if "-grse-" in run or "-maskills-" in run)
    assert [run.split("-fake-")[0] for run in trained] == [
        "locomo-multi-hop-grse-default",
        "locomo-multi-hop-grse-no-structure",
        "locomo-multi-hop-maskills-default",
    ]
    markdown = (out / "table2.md").read_text(encoding="utf-8")
    assert "SMOKE SIZE: LoCoMo trained per category on multi-hop only" in markdown
    document = json.loads((out / "table2.json").read_text(encoding="utf-8"))
    grse = next(row for row in document["rows"] if row["label"] == "GRSE")
    assert grse["cells"]["Qwen3.8|temporal:f1"]["ours"] == NOT_RUN_AT_SIZE
    assert grse["cells"]["Qwen3.8|multi-hop:f1"]["mean"] is not None
    empty = next(row for row in document["rows"] if row["label"] == "Empty library")
    assert all(cell["mean"] is not None for cell in empty["cells"].values())
    table3 = json.loads((out / "table3.json").read_text(encoding="utf-8"))
    cells = {row["label"]: row["cells"]["D->C"] for row in table3["rows"]}
    assert cells["LoCoMo temporal, Qwen3.8: GRSE"]["not_run"] == NOT_RUN_AT_SIZE
    assert cells["LoCoMo multi-hop, Qwen3.8: GRSE"]["not_run"] is None
    # The pooled LoCoMo rows pool the trained category alone, and say so.
    assert cells["LoCoMo, Qwen3.8: GRSE"]["not_run"] is None
    assert "the pooled LoCoMo rows pool multi-hop only" in "\n".join(table3["header"])


def test_table4_names_the_bundled_planted_library_by_its_place_in_the_package(
    smoke: tuple[Path, list[TableBudget]],
) -> None:
    out, _ = smoke
    header = json.loads((out / "table4.json").read_text(encoding="utf-8"))["header"]
    where = "planted library: grse_graph/tasks/locomo_planted/planted.json ("
    assert any(line.startswith(where) for line in header), header
