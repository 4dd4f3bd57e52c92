"""The paper's tables at their smoke size, run exactly as a user types it:
`python evals/<script> --smoke --out DIR` from the repository root, in a subprocess whose
environment has no data variable (`GRSE_SHARED_DATA`, `GRSE_HOTPOTQA`, `GRSE_LOCOMO`) and no
network for Hugging Face (`HF_HUB_OFFLINE=1`). Each script starts its own embedded engine
(the smoke size's small model) unless the environment points the roles elsewhere.

`--smoke` reads the invented fixtures shipped in the package (grse_graph/reproduce/fixtures), so
the test needs neither ../shared/data nor the network. Each table must exit 0 and write its
table with no FAILED cell; a cell without a value must be one the smoke size does not run, and
the header must list it.

Against the fake server, tests/unit/evals/test_smoke_budget.py runs all eight tables the same
way, in one results folder and in the order their runs build on each other, and keeps what each
asks of the model under a ceiling (`python -m tests.unit.evals.smoke_budget` prints the counts);
tests/unit/evals/test_reproduce_fake_server.py runs one through `--config`.

On the engine, to keep CI inside its time: Table 1 (the HotpotQA fixtures, the prompting
baselines, MASkills and both GRSE variants trained; 414 s on 2 cores). The run folders of its
GRSE and MASkills trainings are then checked as the training loop writes them. The other tables
train the same methods with other settings or reuse these runs, so their path to the model is
the one tested here (Tables 4 and 5 took 489 s as a user types them, more than Table 1).

    python -m pytest -m engine tests/integration/test_evals_smoke_engine.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.methods.maskills import MaskillsRecord
from grse_graph.reproduce.registry import TABLES
from grse_graph.reproduce.table import NOT_RUN_AT_SIZE
from grse_graph.training.run_folder import RunFolder

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = {"table4_5": ("table4", "table5")}
ALWAYS_MEASURED = {
    "table1": "Empty library",
}
"""A row of each table whose cells must hold values on the engine (the team answered)."""
DATA_VARIABLES = ("GRSE_SHARED_DATA", "GRSE_HOTPOTQA", "GRSE_LOCOMO")
TABLE_TIMEOUT_S = 1800
"""A guard against a hung table (Table 1's smoke took 388-510 s on 2 cores), not a bound."""


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("evals-smoke")


def user_environment() -> dict[str, str]:
    """The test's environment without the data variables, offline for Hugging Face."""
    env = {key: value for key, value in os.environ.items() if key not in DATA_VARIABLES}
    env.update(HF_HUB_OFFLINE="1", LANGSMITH_TRACING="false")
    return env


def _unfilled(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    labels = {column["key"]: column["label"] for column in document["columns"]}
    return [
        (row["label"], labels.get(key, key), cell)
        for row in document["rows"]
        for key, cell in row["cells"].items()
        if cell["mean"] is None and cell["text"] is None
    ]


def assert_smoke_outputs(results_dir: Path, table: str) -> None:
    """What `table` run at the smoke size must have written in `results_dir`: each output with
    the smoke header and the data line, no FAILED cell, every cell without a value one the smoke
    size does not run and the header lists, and its always-measured row filled."""
    reads_benchmarks = bool(set(TABLES[table].tasks) & {"hotpotqa", "locomo"})
    for name in OUTPUTS.get(table, (table,)):
        markdown = (results_dir / f"{name}.md").read_text(encoding="utf-8")
        assert "SMOKE SIZE" in markdown or name == "table5", name
        assert ("DATA: invented smoke fixtures" in markdown) == reads_benchmarks, name
        document = json.loads((results_dir / f"{name}.json").read_text(encoding="utf-8"))
        cells = [cell for row in document["rows"] for cell in row["cells"].values()]
        assert cells, name
        failed = [cell for cell in cells if cell["failed"]]
        assert not failed, (name, failed)
        unfilled = _unfilled(document)
        assert all(cell.get("not_run") for _, _, cell in unfilled), (name, unfilled)
        if unfilled:
            listed = [line for line in document["header"] if line.startswith(NOT_RUN_AT_SIZE)]
            assert len(listed) == 1 and f"{len(unfilled)} cell(s)" in listed[0], (name, listed)
            for row, _, _ in unfilled:
                assert row in listed[0], (name, row, listed[0])
        measured = ALWAYS_MEASURED.get(name)
        if measured is not None:
            row = next(r for r in document["rows"] if r["label"].startswith(measured))
            assert all(c["mean"] is not None for c in row["cells"].values()), row


def run_smoke_table(table: str, results_dir: Path, *options: str) -> None:
    """`python evals/<script> --smoke OPTIONS --out DIR` from the repository root in a user's
    environment; it must exit 0 and write what `assert_smoke_outputs` checks."""
    script = Path("evals") / TABLES[table].script
    done = subprocess.run(
        [sys.executable, str(script), "--smoke", *options, "--out", str(results_dir)],
        cwd=REPO,
        env=user_environment(),
        capture_output=True,
        text=True,
        timeout=TABLE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert_smoke_outputs(results_dir, table)


def training_run(results_dir: Path, method: str) -> RunFolder:
    """The run folder of the table's one training run of `method` in its default variant."""
    specs = {
        spec.parent / "run": json.loads(spec.read_text(encoding="utf-8"))
        for spec in (results_dir / "runs").glob("*/spec.json")
    }
    found = [
        run
        for run, spec in specs.items()
        if (spec["kind"], spec["method"], spec["variant"]) == ("train", method, "default")
    ]
    assert len(found) == 1, (method, found)
    return RunFolder(found[0])


def assert_one_iteration(run: RunFolder, rollouts: int) -> None:
    """What any method's one training iteration writes: `rollouts` rollouts with steps, one
    plan, a gate whose every decision follows δ and scores every candidate, the validation
    runs of the base and of each candidate, the iteration's libraries, the report and the usage
    of the actor and of the critic on its own role."""
    config = run.read_config()
    (gate,) = run.gate.read()
    assert gate.iteration == 1 and 0.0 <= gate.base_score <= 1.0
    records = run.rollouts.read()
    assert len(records) == rollouts and all(r.rollout.steps for r in records)
    assert len(run.aggregates.read()) == 1
    candidates = run.candidates.read()[0].candidates
    assert sorted(d.agent for d in gate.decisions) == sorted(candidates)
    for decision in gate.decisions:
        assert decision.accepted == (
            decision.candidate_score >= decision.base_score - decision.delta - 1e-9
        )
    assert config.validation_size is not None
    validations = config.validation_size * config.validation_repeats * (1 + len(candidates))
    assert len(run.validation.read()) == validations
    assert (run.path / "libraries" / "iter_1").is_dir()
    assert (run.path / "plots" / "validation.png").is_file()
    usage = run.read_usage()
    assert usage["roles"]["actor"]["calls"] >= rollouts
    assert usage["roles"]["critic"]["calls"] >= 1


@pytest.mark.engine
def test_table_1_as_a_user_types_it(results_dir: Path) -> None:
    run_smoke_table("table1", results_dir)

    grse = training_run(results_dir, "grse")
    group_size = grse.read_config().method.group_size
    assert_one_iteration(grse, rollouts=group_size)  # one training question, G rollouts
    assert grse.report_path.read_text(encoding="utf-8").startswith("# GRSE training report:")
    # The smoke's small critic runs GRSE's structured critique to the smoke cap (measured at
    # caps of 160, 400 and 800 tokens, and with maxLength on its text fields), so its diagnoses
    # are lost; the credits-only call, bounded like the structured one, must then parse: the
    # group keeps a result, and its diagnoses or the reason they were lost.
    (critique,) = grse.credits(CritiqueRecord).read()
    assert critique.error is None and critique.result is not None, critique.error
    assert critique.result.diagnoses or critique.result.diagnosis_error, critique.result
    # The group's first-agent call went out once with n = G; each reply the server sent became
    # that rollout's first step.
    (opening,) = grse.openings.read()
    assert opening.requested == group_size and 1 <= len(opening.replies) <= group_size
    for g, reply in enumerate(opening.replies):
        record = grse.rollouts.get(f"it1-{opening.question_id}-g{g}")
        assert record is not None
        assert record.rollout.steps[0].output == reply.message.text.strip()

    maskills = training_run(results_dir, "maskills")
    assert_one_iteration(maskills, rollouts=1)  # one rollout per training question
    assert "## MASkills credit" in maskills.report_path.read_text(encoding="utf-8")
    (record,) = maskills.credits(MaskillsRecord).read()
    assert record.rollout_ids == [maskills.rollouts.read()[0].unit_id]
    assert record.error is None and record.result is not None, record.error
