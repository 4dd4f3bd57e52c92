"""The centralized and hybrid teams on one demo question against the small-model engine
(slow; `-m engine`)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import load_config
from grse_graph.llm.provider import SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.tasks import load_task
from grse_graph.team import Rollout, default_team, run_rollout

pytestmark = pytest.mark.engine

# The small model rambles; a short cap keeps the test fast without changing the code path.
TEST_MAX_TOKENS = 96


@pytest.fixture
def provider(small_engine_url: str) -> Iterator[ModelRoles]:
    # The embedded default a user gets: the engine's forced tool calls go as a JSON schema.
    config = load_config(env={}, overrides={"actor.max_tokens": TEST_MAX_TOKENS})
    with ModelRoles(config, UsageLedger(), engine_url=small_engine_url) as roles:
        yield roles


@pytest.mark.parametrize("topology", ["centralized", "hybrid"])
def test_delegating_team_records_the_sub_agent_and_the_main_agent(
    topology: str, provider: ModelRoles
) -> None:
    task = load_task("demo")
    question = next(q for q in task.split("test") if task.agent_tools(q, "retriever", 0))
    spec = default_team(task, topology=topology)

    rollout: Rollout = asyncio.run(
        run_rollout(
            spec, task, question, provider, sampling=SamplingSettings.greedy(), rollout_id="it"
        )
    )

    agents = [s.agent for s in rollout.steps]
    # The main agent's first call is forced to delegate: at least one retriever step, recorded
    # before the reasoner's own step, which gives the answer.
    assert agents[-1] == "reasoner" and set(agents[:-1]) == {"retriever"} and len(agents) >= 2
    assert [s.index for s in rollout.steps] == list(range(len(agents)))
    main = rollout.steps[-1]
    delegations = [c for c in main.tool_calls if c.name == "ask_retriever"]
    assert len(delegations) == len(agents) - 1
    assert main.input == f"Question: {question.question}"
    for call, sub in zip(delegations, rollout.steps[:-1], strict=True):
        assert call.error is None
        assert sub.output in call.result
        assert sub.input.startswith(task.render_input(question))
        assert f"## Request of reasoner\n{call.arguments['request']}" in sub.input
    assert all(s.usage.model_calls >= 1 and s.usage.prompt_tokens > 0 for s in rollout.steps)
    assert 0.0 <= rollout.reward <= 1.0
    assert rollout.metrics == task.score(question, rollout.answer).metrics
