"""Issue 26 point 6: the analyses that had no caller are in the reports: the evidence citation
rate and the Avg. over categories in an evaluation's summary, the training/validation split of
actor tokens in a training report."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from grse_graph.evaluation import PredictionRecord, run_evaluation, summarize
from grse_graph.evaluation.summary import summary_table
from grse_graph.team.rollout import Rollout, Step, StepUsage
from grse_graph.training.actor_tokens import actor_token_lines, actor_tokens
from grse_graph.training.config import TrainConfig
from grse_graph.training.records import RolloutRecord, ValidationRecord
from grse_graph.training.run_folder import RunFolder
from tests.fakes import FakeProvider
from tests.unit.evaluation.test_locomo_scoring_paths import TableAnswerer, locomo


def test_a_conversation_evaluation_reports_its_evidence_citation_rate(tmp_path: Path) -> None:
    task = locomo()
    questions = list(task.split("test"))
    answers = {q.id: q.answer for q in questions}
    evidence = {
        q.id: "Evidence: [D1:1] she said so" if n < 2 else "no turn found"
        for n, q in enumerate(questions)
    }
    summary = asyncio.run(
        run_evaluation(
            task,
            "test",
            TableAnswerer(task, answers, evidence),
            FakeProvider(),
            tmp_path,
            progress=False,
        )
    )
    assert summary.overall.evidence_citation_rate == pytest.approx(2 / len(questions))
    table = summary_table(summary)
    assert "evidence cited" in [c.header for c in table.columns]


def record(qid: str, category: str, f1: float) -> PredictionRecord:
    return PredictionRecord(
        id=qid,
        question="q",
        answer="a",
        prediction="p",
        category=category,
        metrics={"f1": f1},
        reward=f1,
        state="correct" if f1 >= 0.5 else "wrong",
    )


def test_the_summary_has_the_avg_over_categories_beside_the_overall_mean() -> None:
    records = [
        record("a1", "temporal", 1.0),
        record("b1", "single-hop", 0.0),
        record("b2", "single-hop", 0.0),
        record("b3", "single-hop", 0.0),
    ]
    summary = summarize(records, task="locomo", split="test", method="m", questions=4)
    assert summary.overall.metrics["f1"] == pytest.approx(0.25)
    assert summary.category_average is not None
    assert summary.category_average.metrics["f1"] == pytest.approx(0.5)
    assert summary.category_average.reward == pytest.approx(0.5)
    rows = summary_table(summary).columns[0]._cells
    assert "Avg." in rows
    one = summarize(records[:1], task="locomo", split="test", method="m", questions=1)
    assert one.category_average is None


def step(agent: str, prompt: int, completion: int) -> Step:
    usage = StepUsage(prompt_tokens=prompt, completion_tokens=completion, model_calls=1)
    return Step(index=0, agent=agent, system_prompt="", input="", output="", usage=usage)


def test_a_training_report_splits_the_actor_tokens_into_training_and_validation(
    tmp_path: Path,
) -> None:
    run = RunFolder(tmp_path / "run")
    run.write_config(TrainConfig(task="demo"))
    rollout = Rollout(rollout_id="r", question_id="q", steps=[step("a", 100, 10), step("b", 50, 5)])
    run.rollouts.append(
        RolloutRecord(
            iteration=1,
            unit_id="u",
            question_id="q",
            group_index=0,
            seed=1,
            library_hashes={},
            rollout=rollout,
        )
    )
    check = Rollout(rollout_id="v", question_id="q", steps=[step("a", 7, 3)])
    run.validation.append(
        ValidationRecord(
            iteration=1,
            unit_id="v",
            variant="base",
            variant_hash="h",
            question_id="q",
            repeat=0,
            reward=1.0,
            rollout=check,
        )
    )
    tokens = actor_tokens(run)
    assert (tokens.training.prompt_tokens, tokens.training.completion_tokens) == (150, 15)
    assert (tokens.validation.prompt_tokens, tokens.validation.completion_tokens) == (7, 3)
    assert tokens.training.model_calls == 2
    lines = "\n".join(actor_token_lines(tokens))
    assert "| training rollouts | 2 | 150 |" in lines
    assert "| validation (gate) | 1 | 7 |" in lines
