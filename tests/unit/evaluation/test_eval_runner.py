"""run_evaluation: files, per-category summary, failures, resume, concurrency, run.json guard."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from grse_graph.errors import ConfigError
from grse_graph.evaluation import (
    EvalFolder,
    PredictionRecord,
    run_evaluation,
    summarize,
)
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team import AgentSpec, TeamSpec
from grse_graph.team.rollout import Rollout
from tests.fakes import FakeProvider, ScriptedChatModel
from tests.unit.team.team_fakes import FakeTask, question


class FakeAnswerer:
    """Answers from a table; raises for ids in `fail`; tracks calls and concurrency."""

    method = "fake"

    def __init__(self, task: FakeTask, answers: dict[str, str], fail: set[str] = frozenset()):
        self.task = task
        self.answers = answers
        self.fail = set(fail)
        self.calls: list[str] = []
        self.in_flight = 0
        self.max_in_flight = 0

    def describe(self) -> dict[str, Any]:
        return {"answers": "table"}

    async def answer(self, q: TaskQuestion, *, rollout_id: str) -> Rollout:
        self.calls.append(q.id)
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        if q.id in self.fail:
            raise ConnectionError("endpoint down")
        scored = self.task.score(q, self.answers[q.id])
        return Rollout(
            rollout_id=rollout_id,
            question_id=q.id,
            answer=self.answers[q.id],
            reward=scored.reward,
            metrics=scored.metrics,
        )


def make_task() -> FakeTask:
    return FakeTask(
        [
            question("q1", answer="Osterlin", category="bridge"),
            question("q2", answer="Tamsford", category="bridge"),
            question("q3", answer="yes", category="comparison"),
            question("q4", answer="no", category="comparison"),
        ]
    )


ANSWERS = {"q1": "Osterlin", "q2": "Paris", "q3": "yes", "q4": "not mentioned"}


def evaluate(task: FakeTask, answerer: Any, out: Path, **kwargs: Any):
    kwargs.setdefault("progress", False)
    return asyncio.run(run_evaluation(task, "test", answerer, FakeProvider(), out, **kwargs))


def read_lines(out: Path) -> list[PredictionRecord]:
    text = (out / "predictions.jsonl").read_text()
    return [PredictionRecord.model_validate_json(line) for line in text.splitlines()]


def test_writes_predictions_and_summary_per_category(tmp_path: Path) -> None:
    task = make_task()
    summary = evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, concurrency=2)

    records = {r.id: r for r in read_lines(tmp_path)}
    assert set(records) == {"q1", "q2", "q3", "q4"}
    assert (records["q2"].prediction, records["q2"].reward, records["q2"].state) == (
        "Paris",
        0.0,
        "wrong",
    )
    assert records["q4"].state == "declined"
    assert records["q1"].rollout is not None and records["q1"].rollout.answer == "Osterlin"
    assert summary.overall.metrics == {"f1": 0.5, "em": 0.5}
    assert summary.per_category["bridge"].metrics["f1"] == 0.5
    assert summary.per_category["comparison"].states["declined"] == 0.5
    assert list(summary.per_category) == ["bridge", "comparison"]
    on_disk = json.loads((tmp_path / "summary.json").read_text())
    assert on_disk["overall"]["metrics"] == {"f1": 0.5, "em": 0.5}
    assert json.loads((tmp_path / "run.json").read_text())["method"] == "fake"


def test_failed_question_is_recorded_counted_and_scored_zero(tmp_path: Path) -> None:
    task = make_task()
    answers = {**ANSWERS, "q2": "Tamsford"}
    summary = evaluate(task, FakeAnswerer(task, answers, fail={"q1"}), tmp_path)

    failed = next(r for r in read_lines(tmp_path) if r.id == "q1")
    assert failed.failed and failed.error == "ConnectionError: endpoint down"
    assert (summary.failed, summary.finished, summary.overall.failed) == (1, 4, 1)
    # q2 and q3 right, q1 failed (0), q4 declined (0).
    assert summary.overall.metrics["f1"] == 0.5
    assert summary.overall.states["failed"] == 0.25
    assert summary.per_category["bridge"].failed == 1


def test_resume_skips_finished_and_retries_failed(tmp_path: Path) -> None:
    task = make_task()
    first = FakeAnswerer(task, ANSWERS, fail={"q3"})
    evaluate(task, first, tmp_path, limit=3)
    assert sorted(first.calls) == ["q1", "q2", "q3"]

    second = FakeAnswerer(task, ANSWERS)
    summary = evaluate(task, second, tmp_path)

    assert sorted(second.calls) == ["q3", "q4"]
    assert (summary.finished, summary.failed, summary.questions) == (4, 0, 4)
    third = FakeAnswerer(task, ANSWERS)
    evaluate(task, third, tmp_path)
    assert third.calls == []


def test_summary_time_adds_up_over_resumed_sessions(tmp_path: Path) -> None:
    task = make_task()
    evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, limit=2)
    summary_path = tmp_path / "summary.json"
    earlier = json.loads(summary_path.read_text())
    earlier["elapsed_s"] = 100.0  # as if the first session had taken 100 s
    summary_path.write_text(json.dumps(earlier))
    summary = evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path)
    assert 100.0 <= summary.elapsed_s < 110.0


def test_resume_tolerates_a_truncated_last_line(tmp_path: Path) -> None:
    task = make_task()
    evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, limit=2)
    with (tmp_path / "predictions.jsonl").open("a") as handle:
        handle.write('{"id": "q3", "question": "cut mid-wri')

    again = FakeAnswerer(task, ANSWERS)
    summary = evaluate(task, again, tmp_path)

    assert sorted(again.calls) == ["q3", "q4"]
    assert [r.id for r in read_lines(tmp_path)][:2] == ["q1", "q2"]
    assert len(read_lines(tmp_path)) == 4
    assert summary.finished == 4


def test_corrupt_line_in_the_middle_is_an_error(tmp_path: Path) -> None:
    task = make_task()
    evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, limit=1)
    path = tmp_path / "predictions.jsonl"
    path.write_text("garbage\n" + path.read_text())
    with pytest.raises(ConfigError, match=r"predictions.jsonl:1: Invalid JSON"):
        EvalFolder(tmp_path).read_predictions()


def test_resume_of_a_different_run_fails_clearly(tmp_path: Path) -> None:
    task = make_task()
    evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, limit=1)
    with pytest.raises(ConfigError, match=r"run.json: field split is \"test\" but this run asks"):
        asyncio.run(
            run_evaluation(
                _RenamedSplit(task),
                "other",
                FakeAnswerer(task, ANSWERS),
                FakeProvider(),
                tmp_path,
                progress=False,
            )
        )


class _RenamedSplit(FakeTask):
    def __init__(self, task: FakeTask) -> None:
        super().__init__(list(task.split("test")))

    def split(self, name: str) -> list[TaskQuestion]:
        return list(super().split("test"))


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    task = make_task()
    answerer = FakeAnswerer(task, ANSWERS)
    evaluate(task, answerer, tmp_path, concurrency=2)
    assert answerer.max_in_flight == 2


def test_team_resume_makes_no_model_calls_for_finished_questions(tmp_path: Path) -> None:
    task = make_task()
    spec = TeamSpec(agents=(AgentSpec(name="a", role="r", library=SkillLibrary.empty("a")),))
    first_model = ScriptedChatModel(["Answer: Osterlin", "Answer: Tamsford"])
    asyncio.run(
        run_evaluation(
            task,
            "test",
            spec,
            FakeProvider(models={"actor": first_model}),
            tmp_path,
            limit=2,
            progress=False,
        )
    )
    assert len(first_model.calls) == 2

    second_model = ScriptedChatModel(["Answer: yes", "Answer: no"])
    summary = asyncio.run(
        run_evaluation(
            task,
            "test",
            spec,
            FakeProvider(models={"actor": second_model}),
            tmp_path,
            progress=False,
        )
    )

    assert len(second_model.calls) == 2
    assert summary.overall.metrics["em"] == 1.0
    records = read_lines(tmp_path)
    assert records[0].rollout is not None and records[0].rollout.steps[0].agent == "a"


def test_progress_prints_the_table(tmp_path: Path) -> None:
    task = make_task()
    console = Console(record=True, width=140)
    asyncio.run(
        run_evaluation(
            task, "test", FakeAnswerer(task, ANSWERS), FakeProvider(), tmp_path, console=console
        )
    )
    text = console.export_text()
    assert "fake / test / fake: 4 of 4 questions, 0 failed" in text
    assert "overall" in text and "bridge" in text


def test_resume_with_another_model_fails_clearly(tmp_path: Path) -> None:
    task = make_task()
    evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, limit=1, model="embedded:small")
    with pytest.raises(ConfigError, match=r"field model is \"embedded:small\" but this run asks"):
        evaluate(task, FakeAnswerer(task, ANSWERS), tmp_path, model="embedded:default")


def test_metrics_of_mixed_tasks_average_over_the_records_reporting_them() -> None:
    def record(qid: str, category: str, metrics: dict[str, float], failed: bool = False):
        return PredictionRecord(
            id=qid, question="q", answer="a", category=category, metrics=metrics, failed=failed
        )

    records = [
        record("p1", "passages", {"f1": 1.0, "em": 1.0}),
        record("c1", "memory", {"f1": 0.5, "bleu": 0.4}),
        record("c2", "memory", {}, failed=True),
    ]
    summary = summarize(records, task="t", split="test", method="m", questions=3)
    assert summary.overall.metrics == pytest.approx({"f1": 0.5, "em": 0.5, "bleu": 0.2})
    assert summary.per_category["passages"].metrics == {"f1": 1.0, "em": 1.0}
    assert summary.per_category["memory"].metrics == pytest.approx({"f1": 0.25, "bleu": 0.2})
