"""A real one-iteration GRSE training on the embedded engine (small model, tiny sizes).

The task is a five-line JSONL file with one-sentence contexts, so every prompt stays short and
the run takes a few minutes even on a busy 2-core machine.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.llm import ModelRoles, UsageLedger
from grse_graph.methods.grse.method import CritiqueRecord
from grse_graph.tasks.registry import load_task
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import run_training
from tests.tiny_task import tiny_grse_config, tiny_llm, write_tiny_task


@pytest.mark.engine
def test_one_iteration_on_the_small_model_writes_the_run_folder(
    small_engine_url: str, tmp_path: Path
) -> None:
    data = write_tiny_task(tmp_path / "tiny.jsonl")
    llm = tiny_llm(small_engine_url)
    config = tiny_grse_config(data, batch_size=1)
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
    assert len(run.rollouts.read()) == 2  # one group of G = 2
    assert all(r.rollout.steps for r in run.rollouts.read())
    critiques = run.credits(CritiqueRecord).read()
    assert len(critiques) == 1
    assert all(c.result is not None or c.error for c in critiques)
    assert len(run.aggregates.read()) == 1
    # The first group's first-agent call went out once with n=G; each reply the server sent
    # (llama.cpp's server sends all n) became that rollout's first step.
    first_opening = run.openings.read()[0]
    assert first_opening.requested == 2
    assert 1 <= len(first_opening.replies) <= 2
    for g, reply in enumerate(first_opening.replies):
        record = run.rollouts.get(f"it1-{first_opening.question_id}-g{g}")
        assert record is not None
        assert record.rollout.steps[0].output == reply.message.text.strip()
    (gate,) = run.gate.read()
    # The gate always scores the base libraries; every candidate gets a decision with both scores.
    assert 0.0 <= gate.base_score <= 1.0
    candidates = run.candidates.read()[0].candidates
    assert sorted(d.agent for d in gate.decisions) == sorted(candidates)
    assert len(run.validation.read()) == 2 * (1 + len(candidates))
    assert (run.path / "libraries" / "iter_1").is_dir()
    assert (run.path / "report.md").read_text().startswith("# GRSE training report: jsonl")
    assert (run.path / "plots" / "validation.png").is_file()
    usage = run.read_usage()
    assert usage["roles"]["actor"]["calls"] >= 4
    assert usage["roles"]["critic"]["calls"] >= 1
