"""Trace ids: training rollouts nest under the training run's trace, predictions keep theirs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.unit.training.fakes import CallLog, CountingProvider, TinyTask


def test_every_training_rollout_records_the_training_runs_trace(tmp_path: Path) -> None:
    config = TrainConfig.model_validate(
        {
            "task": "tiny",
            "iterations": 1,
            "group_size": 2,
            "batch_size": 2,
            "validation_size": 2,
            "concurrency": 2,
        }
    )
    deps = TrainingDeps(
        task=TinyTask(),
        provider=CountingProvider(CallLog()),
        config=config,
        run=RunFolder(tmp_path),
        usage=lambda: {"roles": {}, "total": {}},
    )
    asyncio.run(run_training(deps))
    run = RunFolder(tmp_path)
    rollouts = [r.rollout for r in run.rollouts.read()] + [r.rollout for r in run.validation.read()]
    assert len(rollouts) >= 4
    traces = {r.trace_id for r in rollouts}
    assert len(traces) == 1 and None not in traces  # one session: one training trace
    run_ids = [r.run_id for r in rollouts]
    assert len(set(run_ids)) == len(run_ids) and traces.isdisjoint(run_ids)
