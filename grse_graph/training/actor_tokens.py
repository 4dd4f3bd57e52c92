"""The actor's calls and tokens of a run split by stage: the training rollouts the credit method
judges, probe credit's team runs, the gate's validation executions and the test of the starting
and trained libraries (the paper's cost table counts the first and the gate apart).

Every actor call is an agent turn of a team execution, and every finished execution is recorded
with its steps: `RUN/rollouts.jsonl` (a group's shared n=G opening call counted once, on the
turn that carries its call count), `RUN/probes/probes.jsonl`, `RUN/validation.jsonl` and the
test folders' predictions. A step taken over from an earlier execution (`Step.reused`) was not
paid again and is left out. What no record holds (an execution that failed on every try, a test
folder shared from outside the run folder) is the difference to the actor's calls in
`RUN/usage.json`, shown as its own row so the rows always add up to what the ledger counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from grse_graph.evaluation.store import EvalFolder
from grse_graph.llm import UsageReport
from grse_graph.probes import ProbeStore
from grse_graph.team.rollout import ModelCallTokens, Rollout, StepUsage

from .run_folder import TEST_FOLDERS, RunFolder


class StageTokens(ModelCallTokens):
    """The actor's model calls and tokens in one stage."""

    model_config = ConfigDict(frozen=True)

    executions: int = 0


class ActorTokens(BaseModel):
    """The actor's tokens of a run per stage, and the actor's calls `RUN/usage.json` counts
    (`ledger_calls`; None when the run has no usage.json)."""

    model_config = ConfigDict(frozen=True)

    training: StageTokens
    probe: StageTokens = StageTokens()
    validation: StageTokens
    test: StageTokens = StageTokens()
    ledger_calls: int | None = None

    def stages(self) -> list[tuple[str, StageTokens]]:
        """(label, tokens) of every stage, in the order a run goes through them."""
        return [
            ("training rollouts", self.training),
            ("probe", self.probe),
            ("validation (gate)", self.validation),
            ("test", self.test),
        ]

    @property
    def recorded(self) -> StageTokens:
        """The stages summed: every actor call a record of the run holds."""
        total = StageTokens()
        for _, stage in self.stages():
            total = total + stage
        return total

    @property
    def unrecorded_calls(self) -> int:
        """Actor calls usage.json counts beyond the records (0 without usage.json, or when the
        records hold more: usage.json then missed a session)."""
        if self.ledger_calls is None:
            return 0
        return max(self.ledger_calls - self.recorded.model_calls, 0)


def stage_tokens(rollouts: Iterable[Rollout | None]) -> StageTokens:
    """The summed step usage of `rollouts` (reused steps left out; None: an execution that
    failed before it recorded any step)."""
    executions = 0
    used = StepUsage()
    for rollout in rollouts:
        if rollout is None:
            continue
        executions += 1
        used = sum((step.usage for step in rollout.steps if not step.reused), used)
    tokens = used.model_dump(include=set(ModelCallTokens.model_fields))
    return StageTokens(executions=executions, **tokens)


def _test_rollouts(run: RunFolder) -> list[Rollout | None]:
    rollouts: list[Rollout | None] = []
    for label in TEST_FOLDERS:
        folder = EvalFolder(run.test_dir(label))
        if folder.predictions_path.exists():
            rollouts += [r.rollout for r in folder.read_predictions().values()]
    return rollouts


def ledger_actor_calls(usage: dict[str, Any]) -> int | None:
    """The actor's calls in a usage.json mapping (None for an empty one: no usage written)."""
    if not usage:
        return None
    return UsageReport.model_validate(usage).role("actor").calls


def actor_tokens(run: RunFolder) -> ActorTokens:
    """The actor's tokens of the run in `run`, per stage (blocking: reads the run folder)."""
    return ActorTokens(
        training=stage_tokens(r.rollout for r in run.rollouts.read()),
        probe=stage_tokens(p.rollout for p in ProbeStore(run.probes_dir).read()),
        validation=stage_tokens(r.rollout for r in run.validation.read()),
        test=stage_tokens(_test_rollouts(run)),
        ledger_calls=ledger_actor_calls(run.read_usage()),
    )


def _row(label: str, stage: StageTokens) -> str:
    return (
        f"| {label} | {stage.model_calls} | {stage.prompt_tokens} | "
        f"{stage.cached_prompt_tokens} | {stage.completion_tokens} | {stage.executions} |"
    )


def actor_token_lines(tokens: ActorTokens) -> list[str]:
    """The markdown table of `tokens`: one row per stage (and for calls no record holds), their
    total, and how that total compares with usage.json."""
    lines = [
        "| stage | model calls | prompt tokens | cached prompt tokens | completion tokens "
        "| executions |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *(_row(label, stage) for label, stage in tokens.stages()),
    ]
    missing = tokens.unrecorded_calls
    if missing:
        # Their tokens are in usage.json's role table; no record says how many.
        lines.append(f"| in no record | {missing} | - | - | - | - |")
    recorded = tokens.recorded
    total_calls = recorded.model_calls + missing
    lines.append(_row("total", recorded.model_copy(update={"model_calls": total_calls})))
    return [*lines, "", _ledger_line(tokens)]


def _ledger_line(tokens: ActorTokens) -> str:
    """How the rows compare with the actor's calls in usage.json."""
    ledger, missing = tokens.ledger_calls, tokens.unrecorded_calls
    if ledger is None:
        return "No usage.json: the rows count the recorded executions only."
    if ledger < tokens.recorded.model_calls:
        return (
            f"usage.json counts {ledger} actor calls, fewer than the records hold: a session "
            "of the run wrote no usage."
        )
    if missing:
        return (
            f"usage.json counts {ledger} actor calls; {missing} of them are in no record of "
            "the run folder (executions that failed on every try, or a test folder shared "
            "from outside the run folder)."
        )
    return f"usage.json counts {ledger} actor calls: every one is in a row above."
