"""The training loop's resume guarantees on a real PostgreSQL checkpointer.

Needs a server: `GRSE_POSTGRES_DSN` (`.ci/run` starts one on loopback and sets it); the tests
skip, with that reason, where it is not set. The models are the training unit tests' fakes: what
is under test is the checkpointer, not an engine.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from pathlib import Path

import pytest

from grse_graph.checkpointing import RECORD_FILE, SQLITE_FILE, CheckpointerRecord, CheckpointerSpec
from grse_graph.errors import ConfigError
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.training.fakes import CallLog, CountingProvider, InjectedFailure, TinyTask

DSN = os.environ.get("GRSE_POSTGRES_DSN")
pytestmark = pytest.mark.skipif(
    not DSN, reason="GRSE_POSTGRES_DSN not set (.ci/run starts a PostgreSQL server and sets it)"
)


def _config() -> TrainConfig:
    return TrainConfig.model_validate(
        {
            "task": "tiny",
            "iterations": 2,
            "group_size": 2,
            "batch_size": 2,
            "validation_size": 2,
            "concurrency": 1,
        }
    )


def _deps(run_dir: Path, log: CallLog) -> TrainingDeps:
    return TrainingDeps(
        task=TinyTask(),
        provider=CountingProvider(log),
        config=_config(),
        run=RunFolder(run_dir),
        usage=lambda: {"roles": {}, "total": {}},
    )


def _roles(log: CallLog) -> Counter[str]:
    return Counter(role for role, *_ in log.calls)


def _postgres() -> CheckpointerSpec:
    assert DSN is not None
    return CheckpointerSpec.parse(DSN)


def test_resume_after_a_crash_on_postgres_repeats_no_finished_unit(tmp_path: Path) -> None:
    clean_log = CallLog()
    asyncio.run(run_training(_deps(tmp_path / "clean", clean_log), checkpointer=_postgres()))
    clean = _roles(clean_log)

    # Call 23 is inside iteration 2's rollouts (see the SQLite version of this test).
    crash_log = CallLog(fail_on=23)
    run_dir = tmp_path / "crashed"
    with pytest.raises(InjectedFailure):
        asyncio.run(run_training(_deps(run_dir, crash_log), checkpointer=_postgres()))
    assert not (run_dir / SQLITE_FILE).exists()  # the checkpoints are in PostgreSQL
    record = CheckpointerRecord.model_validate_json((run_dir / RECORD_FILE).read_text())
    assert record.kind == "postgres" and record.thread_id.startswith("train-")
    finished = [r for r in RunFolder(run_dir).rollouts.read() if r.iteration == 2]
    assert len(finished) == 1

    # The resume names no checkpointer: the run's record says where its checkpoints are.
    resume_log = CallLog()
    result = asyncio.run(run_training(_deps(run_dir, resume_log), resume=True))
    crashed, resumed = _roles(crash_log), _roles(resume_log)
    assert crashed["critic"] + resumed["critic"] == clean["critic"]
    assert crashed["optimizer"] + resumed["optimizer"] == clean["optimizer"]
    iteration_1_actor = 16
    assert resumed["actor"] == clean["actor"] - iteration_1_actor - 2 * len(finished)
    ids = [r.unit_id for r in RunFolder(run_dir).rollouts.read()]
    assert len(ids) == len(set(ids)) == 8
    clean_gates = RunFolder(tmp_path / "clean").gate.read()
    assert [g.decisions for g in result.gates] == [g.decisions for g in clean_gates]


def test_runs_sharing_one_database_keep_separate_threads(tmp_path: Path) -> None:
    for name in ("a", "b"):
        asyncio.run(run_training(_deps(tmp_path / name, CallLog()), checkpointer=_postgres()))
    threads = {
        CheckpointerRecord.model_validate_json((tmp_path / n / RECORD_FILE).read_text()).thread_id
        for n in ("a", "b")
    }
    assert len(threads) == 2
    # A finished run resumed again has nothing left to do: its thread is at the end.
    log = CallLog()
    result = asyncio.run(run_training(_deps(tmp_path / "a", log), resume=True))
    assert result.iterations_done == 2 and not log.calls


def test_resume_refuses_the_other_kind_of_checkpointer(tmp_path: Path) -> None:
    asyncio.run(run_training(_deps(tmp_path, CallLog()), checkpointer=_postgres()))
    with pytest.raises(ConfigError, match="checkpoints are in postgres"):
        asyncio.run(
            run_training(_deps(tmp_path, CallLog()), resume=True, checkpointer=CheckpointerSpec())
        )


def test_an_unreachable_server_is_a_one_line_error(tmp_path: Path) -> None:
    spec = CheckpointerSpec.parse("postgresql://grse:secret@127.0.0.1:1/postgres")
    with pytest.raises(ConfigError, match=r"cannot connect") as caught:
        asyncio.run(run_training(_deps(tmp_path, CallLog()), checkpointer=spec))
    assert "secret" not in str(caught.value)
    assert "\n" not in str(caught.value)
