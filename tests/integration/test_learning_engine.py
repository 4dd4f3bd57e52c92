"""The learning check on the embedded engine: one tiny GRSE iteration, both libraries tested,
the per-question transitions and the provenance of every learned skill in report.md."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from grse_graph.evaluation.transitions import OUTCOMES
from grse_graph.llm import ModelRoles, UsageLedger, load_config
from grse_graph.tasks.registry import load_task
from grse_graph.training.demo import learning_config, print_comparison, print_learned, run_demo
from grse_graph.training.graph import TrainingDeps
from grse_graph.training.run_folder import RunFolder

ROWS = [
    ("train", "What colour is the barn?", "red", "The barn on the hill is painted red."),
    ("train", "Which city hosts the fair?", "Oslo", "Every spring the fair is held in Oslo."),
    ("validation", "What does Mia play?", "violin", "Mia plays the violin in a quartet."),
    ("test", "What is the dog's name?", "Rex", "The dog is called Rex."),
    ("test", "Where does Ana work?", "the bakery", "Ana works at the bakery downtown."),
]


@pytest.mark.engine
def test_run_demo_on_the_small_model_compares_both_libraries_question_by_question(
    small_engine_url: str, tmp_path: Path
) -> None:
    data = tmp_path / "tiny.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "split": s, "question": q, "answer": a, "context": c}) + "\n"
            for i, (s, q, a, c) in enumerate(ROWS)
        ),
        encoding="utf-8",
    )
    llm = load_config(
        env={},
        overrides={
            **{f"{role}.base_url": small_engine_url for role in ("actor", "critic", "optimizer")},
            "actor.max_tokens": 64,
            "critic.max_tokens": 300,
            "optimizer.max_tokens": 300,
        },
    )
    config = learning_config(
        task="jsonl",
        data=str(data),
        group_size=2,
        batch_size=2,
        validation_size=1,
        critic_max_tokens=300,
        concurrency=2,
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
        result = asyncio.run(
            run_demo(config, deps, test_limit=None, console=Console(file=io.StringIO()))
        )
    comparison = result.comparison
    assert [t.question_id for t in comparison.transitions] == ["q3", "q4"]
    assert all(t.before in OUTCOMES and t.after in OUTCOMES for t in comparison.transitions)
    assert sum(sum(row.values()) for row in comparison.table.counts.values()) == 2
    assert comparison.paired.low <= comparison.paired.difference <= comparison.paired.high
    final_skills = sum(
        len(list((run.path / path).glob("*/SKILL.md")))
        for path in result.training.final_libraries.values()
    )
    assert len(result.learned) == final_skills
    for skill in result.learned:
        assert skill.changes and all(c.gate is not None for c in skill.changes)
        assert all(q.question for c in skill.changes for q in c.questions)
    report = (run.path / "report.md").read_text(encoding="utf-8")
    assert "## What was learned" in report and "## Test: empty vs trained libraries" in report
    out = io.StringIO()
    console = Console(file=out, width=200)
    print_learned(console, result.learned)
    print_comparison(console, comparison)
    assert "test transitions empty -> trained" in out.getvalue()
