"""LangSmith: dataset adapter, targets, official evaluators; `evaluate` and `aevaluate` offline."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import langsmith
import pytest
from langchain_core.callbacks import AsyncCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from grse_graph.errors import TaskError
from grse_graph.evaluation.langsmith_eval import (
    ensure_dataset,
    example_rows,
    official_evaluator,
    offline_client,
    pack_target,
    question_from,
    run_langsmith_eval,
    sync_target,
    task_examples,
    team_target,
)
from grse_graph.llm.provider import RoleName, SamplingSettings
from grse_graph.skills import Skill, SkillLibrary, export_pack
from grse_graph.tasks import load_task
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team import default_team
from grse_graph.tracing import TRACE_METADATA_KEY
from tests.fakes import FakeProvider

LIMIT = 4


class AnswersByQuestion(BaseChatModel):
    """Answers the question it finds in the prompt: the gold answer for the ids in `right`,
    "no idea" for the others. Records every system prompt it was sent."""

    questions: dict[str, TaskQuestion]
    right: set[str]
    system_prompts: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "answers-by-question"

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        text = "\n".join(str(m.content) for m in messages)
        self.system_prompts.append(str(messages[0].content))
        found = next(q for q in self.questions.values() if q.question in text)
        answer = found.answer if found.id in self.right else "no idea"
        reply = AIMessage(content=f"Reasoning done.\nAnswer: {answer}")
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> AnswersByQuestion:  # type: ignore[override]
        return self


def _setup(right_ids: int = 2) -> tuple[Task, list[TaskQuestion], AnswersByQuestion, FakeProvider]:
    task = load_task("demo")
    questions = list(task.split("test"))[:LIMIT]
    model = AnswersByQuestion(
        questions={q.id: q for q in questions}, right={q.id for q in questions[:right_ids]}
    )

    def factory(role: RoleName, sampling: SamplingSettings | None) -> BaseChatModel:
        return model

    return task, questions, model, FakeProvider(factory=factory)


def _expected_means(
    task: Task, questions: Sequence[TaskQuestion], right: set[str]
) -> dict[str, float]:
    """What the official scorer gives, computed directly from `task.score`: each metric
    averaged over the questions that report it (the demo mixes EM and BLEU questions)."""
    values: dict[str, list[float]] = {}
    for q in questions:
        scored = task.score(q, q.answer if q.id in right else "no idea")
        for key, value in {**scored.metrics, "reward": scored.reward}.items():
            values.setdefault(key, []).append(value)
    return {k: sum(v) / len(v) for k, v in values.items()}


def test_examples_hold_the_question_without_its_gold_answer() -> None:
    task = load_task("demo")
    examples = task_examples(task, "test", LIMIT)
    first = next(iter(task.split("test")))
    assert len(examples) == LIMIT
    assert "answer" not in examples[0].inputs
    assert examples[0].outputs == {"answer": first.answer}
    assert question_from(examples[0].inputs, first.answer) == first
    # Stable ids: uploading twice updates the same examples.
    assert [e.id for e in examples] == [e.id for e in task_examples(task, "test", LIMIT)]


def test_unknown_split_is_an_error() -> None:
    with pytest.raises(TaskError, match="no split 'nosuchsplit'"):
        example_rows(load_task("demo"), "nosuchsplit")


def test_official_evaluator_is_the_task_scorer_and_counts_failures() -> None:
    task = load_task("demo")
    question = next(iter(task.split("test")))
    evaluate = official_evaluator(task)
    inputs, reference = task_examples(task, "test", 1)[0].inputs, {"answer": question.answer}
    right = {
        r["key"]: r["score"]
        for r in evaluate(inputs, {"answer": question.answer}, reference)["results"]
    }
    scored = task.score(question, question.answer)
    assert right == {**scored.metrics, "reward": scored.reward, "failed": 0.0}
    failed = {r["key"]: r["score"] for r in evaluate(inputs, {}, reference)["results"]}
    assert failed == {"reward": 0.0, "failed": 1.0}


def _scores(results: Any) -> list[dict[str, float]]:
    return [{r.key: r.score for r in row["evaluation_results"]["results"]} for row in results]


def test_sync_evaluate_runs_the_async_team_offline_with_the_official_scores() -> None:
    task, questions, model, provider = _setup()
    target = sync_target(team_target(default_team(task), task, provider))
    results = langsmith.evaluate(
        target,
        data=task_examples(task, "test", LIMIT),
        evaluators=[official_evaluator(task)],
        upload_results=False,
        max_concurrency=2,
        client=offline_client(),
    )
    rows = list(results)
    assert len(rows) == LIMIT
    for row in rows:
        assert row["run"].error is None
        assert row["run"].outputs["trace_id"]
    scores = _scores(rows)
    expected = _expected_means(task, questions, model.right)
    for key, mean in expected.items():
        reported = [s[key] for s in scores if key in s]
        assert sum(reported) / len(reported) == pytest.approx(mean)
    assert 0 < expected["reward"] < 1  # two right, two wrong: the scores are not constant


def test_aevaluate_runs_offline_and_summarises_like_the_scorer() -> None:
    task, questions, model, provider = _setup()
    summary = asyncio.run(
        run_langsmith_eval(
            team_target(default_team(task), task, provider),
            task,
            "test",
            limit=LIMIT,
            concurrency=2,
            upload=False,
        )
    )
    assert not summary.uploaded and summary.examples == LIMIT and summary.failed == 0
    assert [r.question_id for r in summary.rows] == [q.id for q in questions]
    expected = _expected_means(task, questions, model.right)
    for key, mean in expected.items():
        assert summary.means[key] == pytest.approx(mean)
    assert all(r.trace_id for r in summary.rows)


def test_a_target_that_raises_is_a_counted_failure() -> None:
    task = load_task("demo")

    async def broken(inputs: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("model down")

    summary = asyncio.run(run_langsmith_eval(broken, task, "test", limit=2, upload=False))
    assert summary.failed == 2
    assert summary.means["failed"] == 1.0 and summary.means["reward"] == 0.0
    assert all(r.error for r in summary.rows)


def test_pack_target_runs_the_team_with_the_packs_libraries(tmp_path: Path) -> None:
    task, _, model, provider = _setup()
    skill = Skill.build(
        name="short-answer-format",
        description="Use when writing the final answer.",
        body="Answer with the entity only.",
    )
    team = default_team(task)
    last = team.agent_names[-1]
    pack = export_pack({last: SkillLibrary.empty(last).add(skill)}, tmp_path / "pack")
    target = sync_target(pack_target(pack, task, provider))
    inputs = task_examples(task, "test", 1)[0].inputs
    out = target(dict(inputs))
    assert out["steps"] == team.agent_names
    assert any("Answer with the entity only." in prompt for prompt in model.system_prompts)


class RunIds(AsyncCallbackHandler):
    """Records (run_id, parent_run_id, metadata) of every chain start."""

    def __init__(self) -> None:
        self.starts: list[tuple[str, str | None, dict[str, Any]]] = []

    async def on_chain_start(
        self,
        serialized: Any,
        inputs: Any,
        *,
        run_id: Any,
        parent_run_id: Any = None,
        metadata: Any = None,
        **kwargs: Any,
    ) -> None:
        self.starts.append(
            (str(run_id), str(parent_run_id) if parent_run_id else None, metadata or {})
        )


def test_rollout_nests_under_the_parent_run_and_records_its_ids() -> None:
    from langchain_core.runnables import RunnableConfig, RunnableLambda

    from grse_graph.team import run_rollout

    task, questions, _, provider = _setup()
    recorder = RunIds()

    async def parent_node(_: Any, config: RunnableConfig) -> Any:
        return await run_rollout(
            default_team(task),
            task,
            questions[0],
            provider,
            sampling=SamplingSettings.greedy(),
            rollout_id="r1",
            parent=config,
        )

    parent = RunnableLambda(parent_node)
    rollout = asyncio.run(
        parent.ainvoke(
            None,
            {
                "callbacks": [recorder],
                "run_id": "00000000-0000-0000-0000-00000000abcd",
                "metadata": {TRACE_METADATA_KEY: "trace-of-training"},
            },
        )
    )
    team_start = next(s for s in recorder.starts if s[0] == rollout.run_id)
    assert team_start[1] == "00000000-0000-0000-0000-00000000abcd"  # a child of the parent run
    assert rollout.trace_id == "trace-of-training"
    # Without a parent the rollout is its own trace.
    alone = asyncio.run(
        run_rollout(
            default_team(task),
            task,
            questions[0],
            provider,
            sampling=SamplingSettings.greedy(),
            rollout_id="r2",
        )
    )
    assert alone.trace_id == alone.run_id


class FakeClient:
    """The three `langsmith.Client` calls `ensure_dataset` makes."""

    def __init__(self) -> None:
        self.datasets: dict[str, list[dict[str, Any]]] = {}

    def has_dataset(self, *, dataset_name: str) -> bool:
        return dataset_name in self.datasets

    def create_dataset(self, dataset_name: str, **kwargs: Any) -> None:
        self.datasets[dataset_name] = []

    def create_examples(self, *, dataset_name: str, examples: list[dict[str, Any]]) -> None:
        by_id = {e["id"]: e for e in self.datasets[dataset_name]}
        by_id.update({e["id"]: e for e in examples})
        self.datasets[dataset_name] = list(by_id.values())


def test_ensure_dataset_uploads_once_and_upserts() -> None:
    task = load_task("demo")
    client = FakeClient()
    assert ensure_dataset(client, task, "test", limit=3) == "grse-demo-test"
    ensure_dataset(client, task, "test", limit=3)
    assert len(client.datasets["grse-demo-test"]) == 3
