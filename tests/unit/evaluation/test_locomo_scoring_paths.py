"""Issue 26 point 6: LoCoMo answers are scored as the official scorer scores them (citations
and all) on every path, so `grse score` and `grse eval` give equal numbers on the same
predictions, and answers that carry citations are reported as a count."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from grse_graph.cli import build_app
from grse_graph.evaluation import run_evaluation
from grse_graph.metrics import locomo_bleu, locomo_f1
from grse_graph.tasks import load_task
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.tasks.locomo import LOCOMO_CATEGORY_NAMES
from grse_graph.team.rollout import Rollout, Step
from tests.fakes import FakeProvider

MINI = Path(__file__).parents[2] / "fixtures" / "tasks" / "locomo_mini.json"


def locomo() -> Task:
    return load_task("locomo", MINI, train_conversations=1, validation_conversations=1)


class TableAnswerer:
    """A retriever hand-off and a reasoner answer per question, from tables."""

    method = "table"

    def __init__(self, task: Task, answers: dict[str, str], evidence: dict[str, str]) -> None:
        self.task = task
        self.answers = answers
        self.evidence = evidence

    def describe(self) -> dict[str, Any]:
        return {"answers": "table"}

    async def answer(self, q: TaskQuestion, *, rollout_id: str) -> Rollout:
        answer = self.answers[q.id]
        scored = self.task.score(q, answer)
        steps = [
            Step(
                index=0, agent="retriever", system_prompt="", input="", output=self.evidence[q.id]
            ),
            Step(index=1, agent="reasoner", system_prompt="", input="", output=answer),
        ]
        return Rollout(
            rollout_id=rollout_id,
            question_id=q.id,
            steps=steps,
            answer=answer,
            reward=scored.reward,
            metrics=scored.metrics,
        )


def test_grse_score_and_grse_eval_give_equal_numbers_on_the_same_predictions(
    tmp_path: Path,
) -> None:
    task = locomo()
    questions = list(task.split("test"))
    assert len(questions) >= 3
    answers = {
        q.id: f"{q.answer} [D1:{n}]" if n % 2 == 0 else q.answer for n, q in enumerate(questions)
    }
    cited = sum(1 for n in range(len(questions)) if n % 2 == 0)
    evidence = {
        q.id: "Evidence: [D1:1] she said so" if n < 2 else "nothing"
        for n, q in enumerate(questions)
    }
    answerer = TableAnswerer(task, answers, evidence)
    out = tmp_path / "eval"
    summary = asyncio.run(
        run_evaluation(task, "test", answerer, FakeProvider(), out, progress=False)
    )
    result = CliRunner().invoke(
        build_app(),
        ["score", "--metric", "locomo", "--input", str(out / "predictions.jsonl"), "--json"],
    )
    assert result.exit_code == 0, result.output
    scored = json.loads(result.stdout)["summary"]
    assert summary.overall.metrics["f1"] == pytest.approx(scored["overall"]["mean_f1"], abs=1e-12)
    assert summary.overall.metrics["bleu"] == pytest.approx(
        scored["overall"]["mean_bleu"], abs=1e-12
    )
    for number, group in scored["per_category"].items():
        name = LOCOMO_CATEGORY_NAMES[int(number)]
        assert summary.per_category[name].metrics["f1"] == pytest.approx(
            group["mean_f1"], abs=1e-12
        )
    # Answers carrying citations are counted, on both paths, and scored as they are.
    assert summary.overall.cited_answers == scored["overall"]["cited_answers"] == cited
    first = questions[0]
    assert summary.overall.metrics["f1"] < 1.0
    assert task.score(first, answers[first.id]).metrics == {
        "f1": locomo_f1(answers[first.id], first.answer, first.context["locomo_category"]),
        "bleu": locomo_bleu(answers[first.id], first.answer, first.context["locomo_category"]),
    }


def test_a_cited_answer_scores_as_the_official_scorer_scores_it() -> None:
    # The official task_eval/evaluation.py normalises "[D1:1]" to the token "d11" and keeps it.
    task = locomo()
    question = next(q for q in task.split("test") if q.id == "conv-a-q0")
    assert task.score(question, "Noodle").reward == 1.0
    cited = task.score(question, "Noodle [D1:1]")
    assert cited.metrics["f1"] == pytest.approx(locomo_f1("Noodle [D1:1]", "Noodle", 4))
    assert cited.reward < 1.0
