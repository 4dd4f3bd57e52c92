"""The `evals/` scripts as a user types them, in a temporary folder with no data and no
network (`HF_HUB_OFFLINE=1`, an empty Hugging Face cache, no `GRSE_*` variable): a table at its
full size stops with one line naming the data flag, exit 1, before any engine; `--smoke
--dry-run` works. Subprocesses, no engine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grse_graph.reproduce.registry import TABLES

REPO = Path(__file__).resolve().parents[3]
EVALS = REPO / "evals"
LIMIT_S = 60
"""The issue's bound on a table without data; a guard against a hang, not a measurement."""


def _offline_env(home: Path) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GRSE_", "HF_")) and key != "PYTEST_CURRENT_TEST"
    }
    env.update(HF_HUB_OFFLINE="1", HF_HOME=str(home / "hf"), LANGSMITH_TRACING="false")
    return env


def _run(script: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    cwd = tmp_path / "cwd"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(EVALS / script), *args],
        cwd=cwd,
        env=_offline_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
        check=False,
    )


@pytest.mark.parametrize(
    ("script", "flag"),
    [("table1_hotpotqa.py", "--data-hotpotqa"), ("table2_locomo.py", "--data-locomo")],
)
def test_a_table_without_data_offline_is_one_line_naming_the_flag(
    script: str, flag: str, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    done = _run(script, ["--out", str(out)], tmp_path)
    lines = (done.stdout + done.stderr).strip().splitlines()
    assert done.returncode == 1, done.stdout + done.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: ") and f"{flag} PATH" in lines[0]
    assert "hotpotqa.github.io" in lines[0] or "github.com/snap-research/locomo" in lines[0]
    assert not (out / "runs").exists() and not (out / "manifests").exists()


@pytest.mark.parametrize("table", ["table1", "table2"])
def test_smoke_dry_run_needs_no_data(table: str, tmp_path: Path) -> None:
    script = TABLES[table].script
    out = tmp_path / "results"
    done = _run(script, ["--smoke", "--dry-run", "--out", str(out)], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"dry run of {table}" in done.stdout
    assert "DATA: invented smoke fixtures" in done.stdout
