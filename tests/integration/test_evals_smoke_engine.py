"""Every paper table at its smoke size on the embedded engine (the small model): each table is
produced, and every cell holds a value, a text or FAILED with its reason (never a silent zero).
The tables share one results folder, in the order their runs build on each other, so T3, T6,
T9 and T11 reuse the runs of T1 and T2.

The HotpotQA and LoCoMo tables run on the invented fixtures of tests/fixtures/evals (the
benchmarks' formats, just the smoke size per split; every table says so in its header), so the
test needs neither ../shared/data nor the network; Tables 4 and 5 run on the bundled demo.
`GRSE_EVALS_SMOKE_DATA=shared` runs them on ../shared/data ($GRSE_SHARED_DATA) instead, and
skips them without it.

    python -m pytest -m engine tests/integration/test_evals_smoke_engine.py

What each table's smoke size asks of the model (calls and max tokens per role, against the fake
server): `python -m tests.unit.evals.smoke_budget`; tests/unit/evals/test_smoke_budget.py keeps
those counts under a ceiling.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.script import main

ORDER = ("table4_5", "table1", "table2", "table3", "table6", "table9", "table10", "table11")
OUTPUTS = {"table4_5": ("table4", "table5")}
ALWAYS_MEASURED = {
    "table1": "Empty library",
    "table4": "GRSE [",
}
"""A row of each table whose cells must hold values on the engine (the team answered)."""
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "evals"
DATA_SWITCH = "GRSE_EVALS_SMOKE_DATA"
"""Set to `shared` to run the HotpotQA and LoCoMo tables on ../shared/data, not the fixtures."""


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("evals-smoke")


@pytest.fixture()
def engine_env(small_engine_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for role in ("actor", "critic", "optimizer"):
        monkeypatch.setenv(f"GRSE_{role.upper()}_BASE_URL", small_engine_url)
    monkeypatch.setenv("LANGSMITH_TRACING", "false")


def _data_args(table: str, shared: Path | None) -> list[str]:
    if not set(TABLES[table].tasks) - {"demo"}:
        return []
    if os.environ.get(DATA_SWITCH) != "shared":
        return ["--fixtures", str(FIXTURES)]
    if shared is None:
        pytest.skip("../shared/data not present")
    return [
        "--data-hotpotqa",
        str(shared / "hotpotqa" / "hotpot_dev_distractor_500.json"),
        "--data-locomo",
        str(shared / "locomo" / "locomo10.json"),
    ]


@pytest.fixture()
def shared_data() -> Path | None:
    configured = os.environ.get("GRSE_SHARED_DATA")
    path = (
        Path(configured)
        if configured
        else Path(__file__).resolve().parents[2].parent / "shared" / "data"
    )
    return path if path.is_dir() else None


@pytest.mark.engine
@pytest.mark.parametrize("table", ORDER)
def test_smoke_table_is_produced_with_every_cell_filled_or_failed(
    table: str, results_dir: Path, engine_env: None, shared_data: Path | None
) -> None:
    args = ["--smoke", "--out", str(results_dir), *_data_args(table, shared_data)]
    assert main(table, args) == 0
    for name in OUTPUTS.get(table, (table,)):
        markdown = (results_dir / f"{name}.md").read_text(encoding="utf-8")
        assert ("SMOKE SIZE" in markdown and "(paper)" in markdown) or name == "table5"
        on_fixtures = "--fixtures" in args
        assert ("DATA: invented smoke fixtures" in markdown) == on_fixtures, name
        document = json.loads((results_dir / f"{name}.json").read_text(encoding="utf-8"))
        cells = [cell for row in document["rows"] for cell in row["cells"].values()]
        assert cells
        for cell in cells:
            filled = cell["mean"] is not None or cell["text"] is not None
            assert filled != cell["failed"], cell
            if cell["failed"]:
                assert cell["ours"].startswith("FAILED (") and cell["failures"]
        measured = ALWAYS_MEASURED.get(name)
        if measured is not None:
            row = next(r for r in document["rows"] if r["label"].startswith(measured))
            assert not any(c["failed"] for c in row["cells"].values()), row
