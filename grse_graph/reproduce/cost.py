"""The dry run's estimate of the calls and tokens each run would send per role, from the
protocol (questions, G, iterations, validation, schedule, the baselines' settings) and the
per-call sizes in `settings.json` (`cost`, stated assumptions). Finished runs cost nothing
more."""

from __future__ import annotations

from collections.abc import Iterable

from grse_graph.counts import Counts
from grse_graph.training.config import TrainConfig

from .manifest import RunSpec
from .settings import CostModel, PaperSettings

ROLES = ("actor", "critic", "optimizer")
AGENTS = 2
"""Agents of every task's default team (retriever, reasoner)."""


def baseline_calls(settings: PaperSettings, method: str) -> int:
    """Upper bound of a baseline's calls per question: CoT-SC's samples; Self-Refine's answer
    and a feedback and a revision per round; one for the others."""
    baselines = settings.table8.baselines
    if method == "cot-sc":
        return baselines.cot_sc_samples
    if method == "self-refine":
        return 1 + 2 * baselines.self_refine_rounds
    return 1


def validation_questions(settings: PaperSettings, task: str, category: str | None) -> int:
    """Table 7's validation size of a run (its category's, or all four summed); a task the
    paper does not have is estimated at HotpotQA's."""
    hotpotqa = settings.table7.hotpotqa.validation
    if task != "locomo":
        return hotpotqa
    sizes = settings.table7.locomo.validation
    chosen = [sizes.get(category)] if category not in (None, "mixed") else list(sizes.values())
    return sum(size or 0 for size in chosen) or hotpotqa


class RoleCost(Counts):
    """Estimated calls and tokens of one role."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


Cost = dict[str, RoleCost]


def _empty() -> Cost:
    return {role: RoleCost() for role in ROLES}


def _per_call(calls: int, prompt_tokens: int, completion_tokens: int) -> RoleCost:
    return RoleCost(
        calls=calls,
        prompt_tokens=calls * prompt_tokens,
        completion_tokens=calls * completion_tokens,
    )


def _actor(model: CostModel, task: str, questions: int, calls_per_question: int) -> RoleCost:
    return _per_call(
        questions * calls_per_question,
        model.actor_prompt_tokens.get(task, 1500),
        model.actor_completion_tokens,
    )


def _team_calls(model: CostModel, task: str) -> int:
    return model.actor_calls_per_question.get(task, 2 * AGENTS)


def _questions(spec: RunSpec, available: int | None) -> int:
    limit = spec.params.get("limit", spec.params.get("test_limit"))
    if limit is None:
        return available or 0
    return int(limit) if available is None else min(int(limit), available)


def estimate(spec: RunSpec, settings: PaperSettings, test_questions: int | None) -> Cost:
    """The estimated cost of one run; `test_questions` is the size of its test split."""
    model = settings.cost
    cost = _empty()
    if spec.kind == "eval":
        q = _questions(spec, test_questions)
        cost["actor"] = _actor(model, spec.task, q, _team_calls(model, spec.task))
    elif spec.kind == "baseline":
        q = _questions(spec, test_questions)
        cost["actor"] = _actor(model, spec.task, q, baseline_calls(settings, spec.method))
    elif spec.kind == "typing":
        # Full libraries of the task (L per agent; a task the paper lacks: LoCoMo's L).
        limit = settings.library_limit(spec.task) or settings.library_limit("locomo") or 1
        cost["critic"] = _per_call(
            AGENTS * limit, model.typing_prompt_tokens, model.typing_completion_tokens
        )
    else:
        cost = _train(spec, settings, test_questions)
    return cost


def _train(spec: RunSpec, settings: PaperSettings, test_questions: int | None) -> Cost:
    model = settings.cost
    config = TrainConfig.model_validate(spec.params["config"])
    rollouts = int(getattr(config.method, "group_size", 1))
    per_question = _team_calls(model, spec.task)
    validation = config.validation_size or validation_questions(settings, spec.task, spec.category)
    iterations = config.iterations
    trained = iterations * config.batch_size * rollouts
    # Validation: the base and one candidate per agent, each V x H executions.
    validated = iterations * validation * config.validation_repeats * (1 + AGENTS)
    tested = 2 * _questions(spec, test_questions)  # starting and trained libraries
    probed = iterations * config.probe.budget if config.probe is not None else 0
    actor = _actor(model, spec.task, trained + validated + tested + probed, per_question)
    critic = _per_call(
        iterations * config.batch_size * (AGENTS if rollouts == 1 else 1),
        model.critic_prompt_tokens,
        model.critic_completion_tokens,
    )
    optimizer = _per_call(
        iterations * AGENTS * model.optimizer_calls_per_agent_iteration,
        model.optimizer_prompt_tokens,
        model.optimizer_completion_tokens,
    )
    return {"actor": actor, "critic": critic, "optimizer": optimizer}


def total(costs: Iterable[Cost]) -> Cost:
    """The sum of several runs' costs, per role."""
    summed = _empty()
    for cost in costs:
        for role in ROLES:
            summed[role] = summed[role] + cost.get(role, RoleCost())
    return summed
