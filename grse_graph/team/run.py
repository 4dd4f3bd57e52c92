"""Run one team execution for one question and score it: the `Rollout`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError

from grse_graph.errors import ModelRequestRefused, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.tracing import traced_config

from .agent import PresampledReply
from .graph import build_team_graph, first_turn_input
from .rollout import Rollout, Step
from .spec import TeamSpec
from .state import TeamState

EXECUTION_ERRORS: tuple[type[BaseException], ...] = (
    ModelRequestRefused,
    StructuredOutputError,
    GraphRecursionError,
)
"""What a failed team execution raises that belongs to this execution (a refused request, an
unparsable reply, a team that loops). Anything else stops the caller: a bug, a crash, or
`ModelEndpointError`, an endpoint that is down after its retries (recording every unit as
failed would finish the run on nothing; stopped, the run resumes once the endpoint is back)."""

# Each agent is one node; the limit only guards against a topology that loops by mistake.
_RECURSION_PER_AGENT = 4


async def run_rollout(
    spec: TeamSpec,
    task: Task,
    question: TaskQuestion,
    provider: ChatModelProvider,
    *,
    sampling: SamplingSettings,
    rollout_id: str,
    group_index: int = 0,
    metadata: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    opening: PresampledReply | None = None,
    parent: RunnableConfig | None = None,
    replay: Sequence[Step] = (),
) -> Rollout:
    """Execute the team once from a fresh state and score its answer with `task.score`.

    The rollout and question ids (and `metadata`) go into the run config metadata so a LangSmith
    trace can be found from the rollout. The seed recorded is `sampling.seed`. `opening`
    replaces the first agent's first model call (see `sample_openings`). Model and HTTP errors
    propagate; callers decide whether to retry or record the failure. `parent` (a node's
    config) nests the team's run in the caller's trace (only its callbacks are taken); the
    rollout records its `trace_id` and `run_id` (`grse_graph.tracing`). With greedy
    `sampling`, `replay` (an earlier rollout's steps for this question) is reused agent by
    agent for as long as each agent's prompt equals the recorded one (`reusable_step`).
    """
    graph = build_team_graph(spec, task, provider, sampling=sampling, max_tokens=max_tokens)
    config: RunnableConfig = {
        "run_name": f"team:{question.id}",
        "metadata": {
            **(metadata or {}),
            "rollout_id": rollout_id,
            "question_id": question.id,
            "group_index": group_index,
            "task": task.name,
        },
        "tags": ["grse-team"],
        "recursion_limit": _RECURSION_PER_AGENT * len(spec.agents) + 5,
    }
    config, trace = traced_config(config, parent)
    result = await graph.ainvoke(
        TeamState(question=question, opening=opening, replay=list(replay)),
        config=config,
    )
    steps = [s if isinstance(s, Step) else Step.model_validate(s) for s in result["steps"]]
    answer = str(result["answer"])
    scored = task.score(question, answer)
    return Rollout(
        rollout_id=rollout_id,
        question_id=question.id,
        group_index=group_index,
        seed=sampling.seed,
        steps=steps,
        answer=answer,
        reward=scored.reward,
        metrics=scored.metrics,
        trace_id=trace.trace_id,
        run_id=trace.run_id,
    )


async def sample_openings(
    spec: TeamSpec,
    task: Task,
    question: TaskQuestion,
    provider: ChatModelProvider,
    *,
    sampling: SamplingSettings,
    n: int,
    metadata: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    parent: RunnableConfig | None = None,
) -> list[PresampledReply]:
    """The opening turn's first reply for `n` rollouts of `question`, from one call with `n`
    choices (the group's shared prompt is computed once). A server that ignores `n` returns
    fewer replies, and a topology without an opening turn (a graph of your own) none; the
    rollouts without one make their own call."""
    turn = first_turn_input(spec, task, question)
    if turn is None:
        return []
    model = provider.chat("actor", sampling=sampling, max_tokens=max_tokens)
    config: RunnableConfig = {
        "run_name": f"opening:{question.id}",
        "metadata": {**(metadata or {}), "question_id": question.id, "task": task.name},
        "tags": ["grse-team"],
    }
    config, _ = traced_config(config, parent)  # nested in the caller's trace, like run_rollout
    protocol = spec.tool_protocols.resolve(spec.agent(turn.agent).tool_protocol)
    return await protocol.sample_opening(model, turn, n, config)
