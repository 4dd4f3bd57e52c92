"""The dry run's estimate of the calls and tokens each run would send per role, from the
protocol (questions, G, iterations, validation, schedule) and the per-call sizes in
`settings.json` (`cost`, stated assumptions). Finished runs cost nothing more."""

from __future__ import annotations

from collections.abc import Iterable

from grse_graph.counts import Counts
from grse_graph.training.config import TrainConfig

from .manifest import RunSpec
from .settings import CostModel

ROLES = ("actor", "critic", "optimizer")
AGENTS = 2
"""Agents of every task's default team (retriever, reasoner)."""
BASELINE_CALLS = {"io": 1, "cot": 1, "cot-sc": 5, "self-refine": 7, "full-context": 1}
"""Upper bound of a baseline's calls per question (CoT-SC 5 samples; Self-Refine an answer
and at most 3 feedback-revision rounds)."""


class RoleCost(Counts):
    """Estimated calls and tokens of one role."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


Cost = dict[str, RoleCost]


def _empty() -> Cost:
    return {role: RoleCost() for role in ROLES}


def _actor(model: CostModel, task: str, questions: int, calls_per_question: int) -> RoleCost:
    calls = questions * calls_per_question
    return RoleCost(
        calls=calls,
        prompt_tokens=calls * model.actor_prompt_tokens.get(task, 1500),
        completion_tokens=calls * model.actor_completion_tokens,
    )


def _team_calls(model: CostModel, task: str) -> int:
    return model.actor_calls_per_question.get(task, 2 * AGENTS)


def _questions(spec: RunSpec, available: int | None) -> int:
    limit = spec.params.get("limit", spec.params.get("test_limit"))
    if limit is None:
        return available or 0
    return int(limit) if available is None else min(int(limit), available)


def estimate(spec: RunSpec, model: CostModel, test_questions: int | None) -> Cost:
    """The estimated cost of one run; `test_questions` is the size of its test split."""
    cost = _empty()
    if spec.kind == "eval":
        q = _questions(spec, test_questions)
        cost["actor"] = _actor(model, spec.task, q, _team_calls(model, spec.task))
    elif spec.kind == "baseline":
        q = _questions(spec, test_questions)
        cost["actor"] = _actor(model, spec.task, q, BASELINE_CALLS.get(spec.method, 1))
    elif spec.kind == "typing":
        skills = AGENTS * 4
        cost["critic"] = RoleCost(
            calls=skills,
            prompt_tokens=skills * model.typing_prompt_tokens,
            completion_tokens=skills * model.typing_completion_tokens,
        )
    else:
        cost = _train(spec, model, test_questions)
    return cost


def _train(spec: RunSpec, model: CostModel, test_questions: int | None) -> Cost:
    config = TrainConfig.model_validate(spec.params["config"])
    rollouts = int(getattr(config.method, "group_size", 1))
    per_question = _team_calls(model, spec.task)
    validation = config.validation_size or 50
    iterations = config.iterations
    trained = iterations * config.batch_size * rollouts
    # Validation: the base and one candidate per agent, each V x H executions.
    validated = iterations * validation * config.validation_repeats * (1 + AGENTS)
    tested = 2 * _questions(spec, test_questions)  # starting and trained libraries
    probed = iterations * config.probe.budget if config.probe is not None else 0
    actor = _actor(model, spec.task, trained + validated + tested + probed, per_question)
    critic_calls = iterations * config.batch_size * (AGENTS if rollouts == 1 else 1)
    critic = RoleCost(
        calls=critic_calls,
        prompt_tokens=critic_calls * model.critic_prompt_tokens,
        completion_tokens=critic_calls * model.critic_completion_tokens,
    )
    optimizer_calls = iterations * AGENTS * model.optimizer_calls_per_agent_iteration
    optimizer = RoleCost(
        calls=optimizer_calls,
        prompt_tokens=optimizer_calls * model.optimizer_prompt_tokens,
        completion_tokens=optimizer_calls * model.optimizer_completion_tokens,
    )
    return {"actor": actor, "critic": critic, "optimizer": optimizer}


def total(costs: Iterable[Cost]) -> Cost:
    """The sum of several runs' costs, per role."""
    summed = _empty()
    for cost in costs:
        for role in ROLES:
            summed[role] = summed[role] + cost.get(role, RoleCost())
    return summed
