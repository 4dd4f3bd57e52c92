"""Executor-local verifiers (spec §2.5, §9.2 row 6): a verifier-backed outcome for one agent's
slice of an episode, so executors in a sequential team stop sharing one Q^a.

The paper credits "the executors with verified execution traces" with an executor-local
outcome; the code gives every executor the episode outcome. Here each non-final agent's steps
are checked by the first verifier that applies to them; the final agent's output is the answer,
so its outcome is the episode's. An agent no verifier applies to keeps the episode outcome.
Verifiers are a seam: `ExecutorVerifier` and the `EXECUTOR_VERIFIERS` registry.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Protocol

from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout, Step


class ExecutorVerifier(Protocol):
    """Decides whether one agent step did its part; None when it does not apply."""

    name: str

    def outcome(self, question: TaskQuestion, step: Step, *, tool_agent: bool) -> bool | None:
        """`tool_agent`: the agent holds the task's tools (the retriever)."""
        ...


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


class EvidenceRetrieved:
    """The retriever (LoCoMo): one of the question's gold evidence turns (`D<s>:<t>`, from the
    dataset's evidence ids) is among the step's tool results."""

    name = "evidence"

    def outcome(self, question: TaskQuestion, step: Step, *, tool_agent: bool) -> bool | None:
        evidence = [str(e) for e in question.context.get("evidence") or []]
        if not evidence or not tool_agent:
            return None
        results = "\n".join(call.result for call in step.tool_calls)
        return any(f"[{e}]" in results for e in evidence)


class AnswerOrSupportingTitle:
    """HotpotQA's first agent: its output contains the gold answer string or the title of a
    supporting passage (questions with `supporting_titles` only)."""

    name = "answer-or-title"

    def outcome(self, question: TaskQuestion, step: Step, *, tool_agent: bool) -> bool | None:
        titles = [str(t) for t in question.context.get("supporting_titles") or []]
        if not titles:
            return None
        said = f" {_normal(step.output)} "
        wanted = [_normal(question.answer), *(_normal(t) for t in titles)]
        return any(w and f" {w} " in said for w in wanted)


EXECUTOR_VERIFIERS: Mapping[str, ExecutorVerifier] = {
    v.name: v for v in (EvidenceRetrieved(), AnswerOrSupportingTitle())
}
"""The verifiers tried in order (the first that applies to a step decides it)."""


def local_outcomes(
    rollout: Rollout,
    question: TaskQuestion,
    tool_agents: Collection[str],
    verifiers: Sequence[ExecutorVerifier] = tuple(EXECUTOR_VERIFIERS.values()),
) -> dict[str, bool]:
    """agent -> executor-local outcome for every non-final agent a verifier applies to (an
    agent with several steps succeeds if one of them does)."""
    if not rollout.steps:
        return {}
    final = rollout.steps[-1].agent
    out: dict[str, bool] = {}
    for step in rollout.steps:
        if step.agent == final:
            continue
        tool_agent = step.agent in tool_agents or bool(step.tool_calls)
        for verifier in verifiers:
            verdict = verifier.outcome(question, step, tool_agent=tool_agent)
            if verdict is not None:
                out[step.agent] = out.get(step.agent, False) or verdict
                break
    return out
