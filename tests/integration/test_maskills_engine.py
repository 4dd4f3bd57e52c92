"""One real MASkills training iteration on the embedded engine (small model, tiny sizes).

One training and two validation questions with one-sentence contexts keep every prompt short,
so the run takes a few minutes on a busy 2-core machine. It checks what MASkills writes to the
run folder (one rollout and one credit record per training question, the plan, the gate
decision) and that the critic and the optimizer ran on their own roles.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.llm import ModelRoles, UsageLedger
from grse_graph.methods.maskills import MaskillsRecord
from grse_graph.tasks.registry import load_task
from grse_graph.training.config import TrainConfig
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.tiny_task import tiny_llm, write_tiny_task


@pytest.mark.engine
def test_one_maskills_iteration_on_the_small_model(small_engine_url: str, tmp_path: Path) -> None:
    data = write_tiny_task(tmp_path / "tiny.jsonl")
    llm = tiny_llm(small_engine_url)
    config = TrainConfig.model_validate(
        {
            "task": "jsonl",
            "data": str(data),
            "method": {
                "name": "maskills",
                "critic_max_tokens": 300,
                "merge_max_tokens": 200,
                "payload_limits": {
                    "step_output_chars": 400,
                    "tool_result_chars": 300,
                    "step_input_chars": 600,
                },
            },
            "iterations": 1,
            "batch_size": 1,
            "validation_size": 2,
            "concurrency": 2,
        }
    )
    ledger = UsageLedger()
    run = RunFolder(tmp_path / "run")
    with ModelRoles(llm, ledger) as roles:
        deps = TrainingDeps(
            task=load_task("jsonl", data=data),
            provider=roles,
            config=config,
            run=run,
            usage=lambda: ledger.report().model_dump(mode="json"),
        )
        result = asyncio.run(run_training(deps))

    assert result.iterations_done == 1
    assert run.read_config().method.name == "maskills"
    rollouts = run.rollouts.read()
    assert len(rollouts) == 1  # one rollout per training question
    assert all(r.rollout.steps for r in rollouts)
    records = run.credits(MaskillsRecord).read()
    assert sorted(r.rollout_ids[0] for r in records) == sorted(r.unit_id for r in rollouts)
    assert all(r.result is not None or r.error for r in records)
    assert len(run.aggregates.read()) == 1
    (gate,) = run.gate.read()
    # The gate always scores the base libraries; every candidate gets a decision with both scores.
    assert 0.0 <= gate.base_score <= 1.0
    candidates = run.candidates.read()[0].candidates
    assert sorted(d.agent for d in gate.decisions) == sorted(candidates)
    for decision in gate.decisions:
        assert decision.accepted == (
            decision.candidate_score >= decision.base_score - decision.delta - 1e-9
        )
    assert len(run.validation.read()) == 2 * (1 + len(candidates))
    assert (run.path / "libraries" / "iter_1").is_dir()
    assert "## MASkills credit" in (run.path / "report.md").read_text()
    usage = run.read_usage()
    assert usage["roles"]["actor"]["calls"] >= 2
    # The critic ran on its own role (the reference ran it on the actor, spec D-7), counted.
    assert usage["roles"]["critic"]["calls"] >= 1
