"""Verified traces (spec §0.1, §9.2 rows 2-7, 26, 27): what one rollout tells SkillMAS.

A step's used skills come from three signals, all stored (row 7): `tool` (load_skill/read_file
invocations), `inline` (the step's closing `Skills used:` line, which the inline rendering asks
for) and `hints` (selected skills whose `allowed_tools` meet the tools the step called). A step
with selected skills and no explicit signal gets one usage-judge call (critic role): `judge`.

Executor-local verifiers (row 6) give a non-final agent's steps a verifier-backed outcome, so
executors in a sequential team stop sharing one Q^a (the paper; the code credits every executor
with the episode outcome). The final agent's output is the answer, so its outcome is the
episode's; an agent no verifier applies to keeps the episode outcome.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.structured import astructured_call
from grse_graph.methods.base import CreditRecord
from grse_graph.metrics.analysis import answer_state
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout, Step

CORRECT_F1 = 0.5
"""y = 1[F1 >= 0.5]: the project's "correct" answer state (row 2)."""
ALL_TYPES = "all"
SKILLS_USED_LINE = "Skills used:"
_USED_LINE = re.compile(
    r"^\s*(?:[*_`]+)?skills?\s+used(?:[*_`]+)?\s*[:：]\s*(.*)$", re.IGNORECASE | re.MULTILINE
)
_NONE_WORDS = frozenset({"", "none", "no", "n/a", "na", "-", "nothing", "null"})


class StepSignals(BaseModel):
    """The used-skill evidence of one agent step; `used` is what credit reads."""

    index: int
    agent: str
    selected: list[str] = Field(default_factory=list)
    tool: list[str] = Field(default_factory=list)
    inline: list[str] | None = Field(
        default=None, description="names on the step's Skills used: line; None: no line"
    )
    hints: list[str] = Field(default_factory=list)
    judge: list[str] | None = Field(default=None, description="None: no judge call was made")
    judge_error: str | None = None

    @property
    def explicit(self) -> bool:
        """Whether the step itself said what it used (an invocation or a Skills used: line)."""
        return bool(self.tool) or self.inline is not None

    @property
    def needs_judge(self) -> bool:
        return bool(self.selected) and not self.explicit

    @property
    def used(self) -> list[str]:
        """Explicit signals (and tool hints) when present, else the judge's marks (and hints)."""
        found = set(self.tool) | set(self.inline or []) | set(self.hints)
        if not self.explicit:
            found |= set(self.judge or [])
        return [s for s in self.selected if s in found]


def parse_used_line(text: str, selected: Sequence[str]) -> list[str] | None:
    """The selected skills named on the last `Skills used:` line (None without such a line;
    an empty list for `Skills used: none`). Names outside the selection are ignored."""
    matches = _USED_LINE.findall(text)
    if not matches:
        return None
    raw = matches[-1]
    names = {
        part.strip().strip("`*'\".").lower()
        for part in re.split(r"[,;]| and ", raw)
        if part.strip().strip("`*'\".").lower() not in _NONE_WORDS
    }
    return [s for s in selected if s.lower() in names]


def step_signals(rollout: Rollout, libraries: Mapping[str, SkillLibrary]) -> list[StepSignals]:
    """The explicit signals of every step (the judge's marks are added by the credit call);
    `hints`: selected skills whose `allowed_tools` meet the task tools the step called."""
    out = []
    for step in rollout.steps:
        selected = list(step.skills_present)
        library = libraries.get(step.agent, SkillLibrary.empty(step.agent))
        called = {c.name for c in step.tool_calls}
        out.append(
            StepSignals(
                index=step.index,
                agent=step.agent,
                selected=selected,
                tool=[s for s in step.skills_invoked if s in selected],
                inline=parse_used_line(step.output, selected) if selected else None,
                hints=[
                    s
                    for s in selected
                    if library.has(s) and called & set(library.get(s).allowed_tools)
                ],
            )
        )
    return out


class VerifiedTrace(BaseModel):
    """One episode as SkillMAS reads it (spec §0.1, mapped by §9.2)."""

    rollout_id: str
    question_id: str
    task_type: str
    task: str
    success: bool
    score: float | None = None
    steps: int = 0
    max_steps: int | None = None
    selected: dict[str, list[str]] = Field(default_factory=dict)
    used: dict[str, list[str]] = Field(default_factory=dict)
    executors: list[str] = Field(default_factory=list)
    tool_calls: int = 0
    action_trace: list[str] = Field(default_factory=list)
    error_message: str = ""
    summary: str = ""
    local: dict[str, bool] = Field(
        default_factory=dict,
        description="executor-local verified outcome by agent, where a verifier applies",
    )


def success_rate(traces: Sequence[VerifiedTrace]) -> float:
    """The share of successful traces (0 with none)."""
    return sum(t.success for t in traces) / len(traces) if traces else 0.0


def by_type(traces: Sequence[VerifiedTrace]) -> dict[str, list[VerifiedTrace]]:
    """The traces grouped by task type, in first-seen order."""
    out: dict[str, list[VerifiedTrace]] = {}
    for t in traces:
        out.setdefault(t.task_type, []).append(t)
    return out


def task_type_of(category: str | None, mode: str) -> str:
    """tau: the question's category (row 1), or `all` (label-free)."""
    if mode == ALL_TYPES or not category:
        return ALL_TYPES
    return str(category)


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def build_trace(
    rollout: Rollout,
    *,
    question: str,
    gold: str,
    task_type: str,
    signals: Sequence[StepSignals],
    tool_budget: int,
    local: Mapping[str, bool] | None = None,
) -> VerifiedTrace:
    """The verified trace of one rollout: success = F1 >= 0.5 (reward when the task has no F1),
    steps = task-tool calls, maxSteps = the agents' tool budget (None when 0), error message =
    the rollout error or the answer state, summary "Q | gold | pred | F1"."""
    f1 = rollout.metrics.get("f1")
    score = float(f1) if f1 is not None else float(rollout.reward)
    calls = sum(len(s.tool_calls) for s in rollout.steps)
    success = rollout.error is None and score >= CORRECT_F1
    if rollout.error:
        error = _clip(rollout.error, 160)
    elif success:
        error = ""
    else:
        error = answer_state(rollout.answer, min(1.0, max(0.0, score)))
    actions: list[str] = []
    for step in rollout.steps:
        for call in step.tool_calls:
            args = ", ".join(f"{k}={_clip(str(v), 40)}" for k, v in call.arguments.items())
            matches = call.result.count("\n") + 1 if call.result.strip() else 0
            actions.append(f"{step.agent} > {call.name}({args}) -> {matches} matches")
        actions.append(f"{step.agent} > respond({_clip(step.output, 80)})")
    executors: list[str] = []
    for step in rollout.steps:
        if step.agent not in executors:
            executors.append(step.agent)
    selected: dict[str, list[str]] = {}
    used: dict[str, list[str]] = {}
    for sig in signals:
        selected.setdefault(sig.agent, [])
        used.setdefault(sig.agent, [])
        selected[sig.agent] += [s for s in sig.selected if s not in selected[sig.agent]]
        used[sig.agent] += [s for s in sig.used if s not in used[sig.agent]]
    return VerifiedTrace(
        rollout_id=rollout.rollout_id,
        question_id=rollout.question_id,
        task_type=task_type,
        task=question,
        success=success,
        score=score,
        steps=calls,
        max_steps=tool_budget or None,
        selected=selected,
        used=used,
        executors=executors,
        tool_calls=calls,
        action_trace=actions,
        error_message=error,
        summary=(
            f"Q: {_clip(question, 120)} | gold: {_clip(gold, 60)} | "
            f"pred: {_clip(rollout.answer, 60)} | F1 {score:.2f}"
        ),
        local=dict(local or {}),
    )


class SkillmasRecord(CreditRecord):
    """One rollout's verified trace and the used-skill signals of each of its steps."""

    method: Literal["skillmas"] = "skillmas"
    trace: VerifiedTrace | None = None
    signals: list[StepSignals] = Field(default_factory=list)
    judge_calls: int = 0


JUDGE_SYSTEM = (
    "You check which of an agent's skills its response actually followed. A skill counts only "
    "if the response visibly applies its steps, guards or checks; being available is not use. "
    "Return the names of the followed skills (an empty list when none was followed)."
)


class UsedSkills(BaseModel):
    used: list[str] = Field(description="names of the followed skills, or empty")


async def judge_step(
    step: Step, library: SkillLibrary, provider: ChatModelProvider, max_tokens: int | None
) -> list[str]:
    """The selected skills the step followed, by one structured critic call whose names are
    limited to the selection (raises StructuredOutputError/ModelRequestRefused)."""
    lines = [f"Agent: {step.agent}", "Skills it was given:"]
    lines += [
        f"### {n}\n{library.get(n).body[:800]}" for n in step.skills_present if library.has(n)
    ]
    lines += ["", "Its response:", step.output[:1500]]
    names: Any = Literal[tuple(step.skills_present)]
    schema = create_model(
        "FollowedSkills",
        __base__=UsedSkills,
        used=(list[names], Field(description="names of the followed skills, or empty")),
    )
    model = provider.chat("critic", sampling=SamplingSettings(), max_tokens=max_tokens)
    messages = [SystemMessage(JUDGE_SYSTEM), HumanMessage("\n".join(lines))]
    result = await astructured_call(model, schema, messages)
    return [s for s in step.skills_present if s in set(result.used)]


ExecutorVerifier = Callable[[TaskQuestion, Step, bool], bool | None]
"""Whether one agent step did its part (None: does not apply); the bool says the agent holds
the task's tools (the retriever)."""


def _normal(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


def evidence_retrieved(question: TaskQuestion, step: Step, tool_agent: bool) -> bool | None:
    """The retriever (LoCoMo): a gold evidence turn (`D<s>:<t>`) is among its tool results."""
    evidence = [str(e) for e in question.context.get("evidence") or []]
    if not evidence or not tool_agent:
        return None
    results = "\n".join(call.result for call in step.tool_calls)
    return any(f"[{e}]" in results for e in evidence)


def answer_or_supporting_title(question: TaskQuestion, step: Step, tool_agent: bool) -> bool | None:
    """HotpotQA's first agent: its output holds the gold answer or a supporting passage title."""
    titles = [str(t) for t in question.context.get("supporting_titles") or []]
    if not titles:
        return None
    said = f" {_normal(step.output)} "
    wanted = [_normal(question.answer), *(_normal(t) for t in titles)]
    return any(w and f" {w} " in said for w in wanted)


EXECUTOR_VERIFIERS: tuple[ExecutorVerifier, ...] = (evidence_retrieved, answer_or_supporting_title)
"""The verifiers tried in order (the first that applies to a step decides it)."""


def local_outcomes(
    rollout: Rollout,
    question: TaskQuestion,
    tool_agents: Collection[str],
) -> dict[str, bool]:
    """agent -> executor-local outcome for every non-final agent a verifier applies to (an
    agent with several steps succeeds if one of them does)."""
    out: dict[str, bool] = {}
    for step in rollout.steps:
        if step.agent == rollout.steps[-1].agent:
            continue
        tool_agent = step.agent in tool_agents or bool(step.tool_calls)
        for verifier in EXECUTOR_VERIFIERS:
            verdict = verifier(question, step, tool_agent)
            if verdict is not None:
                out[step.agent] = out.get(step.agent, False) or verdict
                break
    return out
