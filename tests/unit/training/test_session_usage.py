"""usage.json after a session: written on success by the caller and kept on failure by the one
helper `grse train` and the Python API's `train` share (`usage_kept_on_failure`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from grse_graph.tasks import load_task
from grse_graph.training.config import TrainConfig
from grse_graph.training.context import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.session import usage_kept_on_failure, write_run_usage
from tests.fakes import FakeProvider


def _deps(run: RunFolder, usage: dict[str, Any] | None) -> TrainingDeps:
    return TrainingDeps(
        task=load_task("demo"),
        provider=FakeProvider(),
        config=TrainConfig(task="demo"),
        run=run,
        usage=(lambda: usage) if usage is not None else None,
    )


def test_a_session_that_fails_keeps_its_usage_and_raises_its_own_error(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    deps = _deps(run, {"roles": {"critic": {"calls": 2}}})
    with pytest.raises(RuntimeError, match="endpoint refused"), usage_kept_on_failure(deps):
        raise RuntimeError("endpoint refused")
    assert run.read_usage() == {"roles": {"critic": {"calls": 2}}}


def test_a_failing_usage_write_does_not_hide_the_sessions_error(tmp_path: Path) -> None:
    (tmp_path / "run").write_text("a file, not a folder")  # usage.json cannot go in here
    deps = _deps(RunFolder(tmp_path / "run"), {"roles": {}})
    with pytest.raises(RuntimeError, match="killed"), usage_kept_on_failure(deps):
        raise RuntimeError("killed")


def test_without_a_ledger_nothing_is_written(tmp_path: Path) -> None:
    run = RunFolder(tmp_path / "run")
    run.path.mkdir()
    write_run_usage(_deps(run, None))
    with usage_kept_on_failure(_deps(run, None)):
        pass
    assert not run.usage_path.exists()
