"""The two-agent team against the real small-model engine (slow; `-m engine`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.provider import SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.tasks import GREP_TOOL_NAME, Task, TaskQuestion, load_task
from grse_graph.team import Rollout, default_team, run_rollout

pytestmark = pytest.mark.engine

# The small model rambles; a short cap keeps the test fast without changing the code path. It
# leaves room for a forced grep call that writes its query to the schema's 200-character bound
# (SmolLM2 writes a digit per token).
TEST_MAX_TOKENS = 256


@pytest.fixture
def provider(small_engine_url: str) -> Iterator[ModelRoles]:
    # The embedded default a user gets: the engine's forced tool calls go as a JSON schema.
    config = load_config(env={}, overrides={"actor.max_tokens": TEST_MAX_TOKENS})
    with ModelRoles(config, UsageLedger(), engine_url=small_engine_url) as roles:
        yield roles


def run_team(task: Task, questions: Sequence[TaskQuestion], provider: ModelRoles) -> list[Rollout]:
    spec = default_team(task)

    async def run_all() -> list[Rollout]:
        return [
            await run_rollout(
                spec,
                task,
                q,
                provider,
                sampling=SamplingSettings.greedy(),
                rollout_id=f"it-{q.id}",
            )
            for q in questions
        ]

    return asyncio.run(run_all())


def has_tools(task: Task, question: TaskQuestion) -> bool:
    return bool(task.agent_tools(question, "retriever", 0))


def assert_complete(rollout: Rollout, task: Task, question: TaskQuestion) -> None:
    assert [s.agent for s in rollout.steps] == ["retriever", "reasoner"]
    assert all(s.usage.model_calls >= 1 and s.usage.prompt_tokens > 0 for s in rollout.steps)
    assert rollout.steps[0].output in rollout.steps[1].input
    assert 0.0 <= rollout.reward <= 1.0
    assert rollout.metrics == task.score(question, rollout.answer).metrics


def assert_grep_recorded(rollout: Rollout) -> None:
    calls = rollout.steps[0].tool_calls
    assert calls, "the retriever made no tool call"
    assert calls[0].name == GREP_TOOL_NAME
    assert calls[0].error is None and calls[0].result.strip()
    # The reasoner answers from the retriever's hand-off, never from the raw results.
    assert calls[0].result not in rollout.steps[1].input
    assert rollout.steps[0].output in rollout.steps[1].input


def test_demo_team_on_a_passage_and_a_conversation_question(provider: ModelRoles) -> None:
    task = load_task("demo")
    test = list(task.split("test"))
    chosen = [
        next(q for q in test if not has_tools(task, q)),
        next(q for q in test if has_tools(task, q)),
    ]

    passage, conversation = run_team(task, chosen, provider)

    assert_complete(passage, task, chosen[0])
    assert passage.steps[0].tool_calls == []
    assert_complete(conversation, task, chosen[1])
    assert_grep_recorded(conversation)


@pytest.mark.shared_data
def test_hotpotqa_team_on_two_questions(provider: ModelRoles, shared_data_dir: Path) -> None:
    task = load_task("hotpotqa", shared_data_dir / "hotpotqa" / "hotpot_dev_distractor_500.json")
    questions = list(task.split("test"))[:2]

    rollouts = run_team(task, questions, provider)

    for rollout, q in zip(rollouts, questions, strict=True):
        assert_complete(rollout, task, q)
        assert rollout.steps[0].input_ref == f"question:{q.id}:input"


@pytest.mark.shared_data
def test_locomo_team_records_grep_calls(provider: ModelRoles, shared_data_dir: Path) -> None:
    # Fewer turns per search keep the rollout inside the small engine's 4,096-token context.
    task = load_task("locomo", shared_data_dir / "locomo", max_grep_results=5)
    questions = list(task.split("test"))[:2]

    rollouts = run_team(task, questions, provider)

    for rollout, q in zip(rollouts, questions, strict=True):
        assert_complete(rollout, task, q)
        assert_grep_recorded(rollout)
