"""`grse train` reads its task before it starts an engine: a wrong task name, a missing data
file or a split the run needs and the data lacks costs one line and exit 1, not an engine
start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app, train_cmd
from grse_graph.errors import GrseError
from grse_graph.training.config import TrainConfig
from grse_graph.training.session import check_training_splits, load_training_task

runner = CliRunner()


@pytest.fixture
def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the command gets as far as opening its endpoints."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("grse train started an engine")

    monkeypatch.setattr(train_cmd, "open_endpoints", refuse)


def _rows(folder: Path, split: str) -> Path:
    data = folder / f"{split}-only.jsonl"
    row = {"split": split, "question": "q?", "answer": "a", "context": "a."}
    data.write_text(json.dumps(row) + "\n")
    return data


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("unknown task", "unknown task 'nosuch'"),
        ("missing data file", "data file not found"),
        ("no train split", "no split 'train'"),
        ("no validation split", "no split 'validation'"),
    ],
)
def test_bad_task_input_is_one_line_before_any_engine(
    case: str, expected: str, tmp_path: Path, no_engine: None
) -> None:
    args = {
        "unknown task": ["--task", "nosuch"],
        "missing data file": ["--task", "hotpotqa", "--data", str(tmp_path / "none.json")],
        "no train split": ["--task", "jsonl", "--data", str(_rows(tmp_path, "test"))],
        "no validation split": ["--task", "jsonl", "--data", str(_rows(tmp_path, "train"))],
    }[case]
    result = runner.invoke(build_app(), ["train", *args, "--out", str(tmp_path / "run")])
    assert result.exit_code == 1, result.output
    assert isinstance(result.exception, GrseError), result.exception
    message = str(result.exception)
    assert expected in message and "\n" not in message
    assert "iteration" not in result.output  # no progress display was drawn


def test_a_method_that_never_validates_needs_no_validation_split(tmp_path: Path) -> None:
    data = str(_rows(tmp_path, "train"))
    skillmas = TrainConfig(task="jsonl", data=data, method={"name": "skillmas"})  # type: ignore[arg-type]
    check_training_splits(load_training_task(skillmas), skillmas)
    gated = TrainConfig(task="jsonl", data=data)
    with pytest.raises(GrseError, match="no split 'validation'"):
        check_training_splits(load_training_task(gated), gated)


def test_probe_credit_on_a_split_the_data_lacks_is_refused(tmp_path: Path) -> None:
    data = str(_rows(tmp_path, "train"))
    probed = TrainConfig(
        task="jsonl",
        data=data,
        method={"name": "skillmas"},  # type: ignore[arg-type]
        probe={"split": "test"},  # type: ignore[arg-type]
    )
    with pytest.raises(GrseError, match="no split 'test'"):
        check_training_splits(load_training_task(probed), probed)
