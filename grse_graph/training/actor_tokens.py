"""The actor's tokens of a training run split by stage: the training rollouts the credit method
judges, and the validation executions of the gate (the paper's cost table counts them apart).

Read from the steps the run folder recorded (`RUN/rollouts.jsonl`, `RUN/validation.jsonl`);
a step taken over from an earlier execution (`Step.reused`) was not paid again and is left out.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from grse_graph.team.rollout import ModelCallTokens, Rollout, StepUsage

from .run_folder import RunFolder


class StageTokens(ModelCallTokens):
    """The actor's model calls and tokens in one stage."""

    model_config = ConfigDict(frozen=True)

    executions: int = 0


class ActorTokens(BaseModel):
    """The actor's tokens of a run: training rollouts and validation executions."""

    model_config = ConfigDict(frozen=True)

    training: StageTokens
    validation: StageTokens


def stage_tokens(rollouts: Iterable[Rollout]) -> StageTokens:
    """The summed step usage of `rollouts` (reused steps left out)."""
    executions = 0
    used = StepUsage()
    for rollout in rollouts:
        executions += 1
        used = sum((step.usage for step in rollout.steps if not step.reused), used)
    tokens = used.model_dump(include=set(ModelCallTokens.model_fields))
    return StageTokens(executions=executions, **tokens)


def actor_tokens(run: RunFolder) -> ActorTokens:
    """The actor's tokens of the run in `run`, per stage (blocking: reads the run folder)."""
    return ActorTokens(
        training=stage_tokens(r.rollout for r in run.rollouts.read()),
        validation=stage_tokens(r.rollout for r in run.validation.read()),
    )


def actor_token_lines(tokens: ActorTokens) -> list[str]:
    """The markdown table of `tokens`: one row per stage and their total."""
    total = tokens.training + tokens.validation
    lines = [
        "| stage | model calls | prompt tokens | cached prompt tokens | completion tokens "
        "| executions |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for label, stage in (
        ("training rollouts", tokens.training),
        ("validation", tokens.validation),
        ("total", total),
    ):
        lines.append(
            f"| {label} | {stage.model_calls} | {stage.prompt_tokens} | "
            f"{stage.cached_prompt_tokens} | {stage.completion_tokens} | {stage.executions} |"
        )
    return lines
