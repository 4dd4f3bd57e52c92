"""The MASkills critic payload: one trajectory as text, in the reference's order (spec §2.2).

Task context, question and ground truth (training questions only: the critic never sees a
validation or test question); the team score with a SUCCESS/FAILURE label; then each step's
agent, policy (system prompt), output and a position label; the final answer and a checklist;
then the "Invoked skills" block (xi) with each skill's description and body excerpt; then the
agent ids. As in the reference the critic sees no tool calls or results and no agent's user
input beyond the first (spec D-15, kept as released).

Two compactions keep a small critic's context free, without dropping what the reference shows:
a skill body that is shown in the xi block is replaced inside the policy by a reference to it,
and a policy identical to an earlier step's is shown as "same as step k". The task context and
step outputs are capped by the shared `PayloadLimits` (a capped text says how much was cut);
with `PayloadLimits.max_tokens` the payload is rendered uncut first and cut further only while
it is over that token budget.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass

from pydantic import BaseModel

from grse_graph.llm.tokens import approximate_tokens
from grse_graph.methods.grse.payload import PayloadLimits, fit_to_budget
from grse_graph.methods.maskills import prompts
from grse_graph.methods.maskills.trace import SkillTrace
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout

SUCCESS_ABOVE = 0.5


class TrajectoryPayload(BaseModel):
    """The rendered payload of one trajectory and its size (`size_tokens` and `over_budget`
    only with a token budget: over budget even at the smallest cap, it is sent as is and an
    overflow is the critic call's error)."""

    rollout_id: str
    text: str
    size_chars: int
    size_tokens: int | None = None
    over_budget: bool = False


def _cap(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]} [... {len(text) - limit} chars cut]"


def _position(index: int, count: int) -> str:
    if index == count - 1:
        return prompts.POSITION_ROLES["last"]
    if index == 0:
        return prompts.POSITION_ROLES["first"]
    return prompts.POSITION_ROLES["middle"]


def outcome_line(rollout: Rollout) -> str:
    """The team score with its label and what the score means."""
    label = "SUCCESS" if rollout.reward > SUCCESS_ABOVE else "FAILURE"
    metrics = ", ".join(f"{k}={v:.2f}" for k, v in sorted(rollout.metrics.items()))
    line = (
        f"Team score: {rollout.reward:.4f} -> {label} (success means a score above "
        f"{SUCCESS_ABOVE}). The score is the task's reward for the final answer against the "
        "ground truth, from 0 (wrong) to 1 (fully correct)"
    )
    return line + (f"; its metrics: {metrics}." if metrics else ".")


@dataclass(frozen=True)
class _Renderer:
    question: TaskQuestion
    libraries: Mapping[str, SkillLibrary]
    rollout: Rollout
    trace: SkillTrace
    _: KW_ONLY
    limits: PayloadLimits
    excerpt_chars: int
    brevity_hint: bool

    def _excerpt(self, body: str) -> str:
        return _cap(body.strip(), self.excerpt_chars)

    def _policy(self, agent: str, prompt: str) -> str:
        library = self.libraries.get(agent)
        if library is None:
            return prompt.strip()
        shown = set(self.trace.skills_of(agent))
        for skill in library.skills:
            body = skill.body.strip()
            if skill.name in shown and body and body in prompt:
                prompt = prompt.replace(body, f"[skill {skill.name}: see Invoked skills]")
        return prompt.strip()

    def render(self) -> str:
        return "\n\n".join([self._task(), self._steps(), self._skills(), self._agents()])

    def _task(self) -> str:
        context = self.rollout.steps[0].input if self.rollout.steps else ""
        lines = [
            "# Trajectory",
            f"Question: {self.question.question}",
            f"Ground truth: {self.question.answer}",
        ]
        if context.strip():
            lines += [
                "Context (the input the first agent received):",
                _cap(context.strip(), self.limits.step_input_chars),
            ]
        lines.append(outcome_line(self.rollout))
        if self.brevity_hint:
            lines.append(prompts.BREVITY_HINT)
        return "\n".join(lines)

    def _steps(self) -> str:
        steps = self.rollout.steps
        lines = ["# Steps"]
        policies: dict[tuple[str, str], int] = {}
        for i, step in enumerate(steps):
            lines.append(f"## Step {i + 1} - agent {step.agent} ({_position(i, len(steps))})")
            key = (step.agent, step.system_prompt)
            if key in policies:
                lines.append(f"Policy: same as step {policies[key]}")
            else:
                policies[key] = i + 1
                lines.append(f"Policy:\n{self._policy(step.agent, step.system_prompt)}")
            lines.append(f"Output:\n{_cap(step.output.strip(), self.limits.step_output_chars)}")
        lines.append(f"Final answer: {json.dumps(self.rollout.answer, ensure_ascii=False)}")
        if self.rollout.error is not None:
            lines.append(f"Execution error: {self.rollout.error}")
        lines.append(prompts.CHECKLIST)
        return "\n".join(lines)

    def _skills(self) -> str:
        lines = ["# Invoked skills"]
        if not self.trace.pairs():
            lines.append("No skills were present in this trajectory.")
            return "\n".join(lines)
        for agent in self.trace.agents:
            library = self.libraries.get(agent)
            lines.append(f"## {agent}")
            for name in self.trace.skills_of(agent):
                steps = ", ".join(str(s + 1) for s in self.trace.steps_of(agent, name))
                if library is None or not library.has(name):
                    lines.append(f"- {name} (steps {steps})")
                    continue
                skill = library.get(name)
                lines.append(f"- {name} (steps {steps}): {skill.description}")
                lines.append(self._excerpt(skill.body))
        return "\n".join(lines)

    def _agents(self) -> str:
        return "# Agent ids\n" + ", ".join(self.libraries)


def build_trajectory_payload(
    question: TaskQuestion,
    libraries: Mapping[str, SkillLibrary],
    rollout: Rollout,
    trace: SkillTrace,
    *,
    limits: PayloadLimits | None = None,
    excerpt_chars: int = 800,
    brevity_hint: bool = False,
) -> TrajectoryPayload:
    """Render one trajectory for the MASkills critic (agents listed in `libraries` order),
    fitted to `limits.max_tokens` when set (counted with `approximate_tokens`)."""
    limits = limits or PayloadLimits()

    def render(field_limits: PayloadLimits) -> str:
        return _Renderer(
            question,
            libraries,
            rollout,
            trace,
            limits=field_limits,
            excerpt_chars=excerpt_chars,
            brevity_hint=brevity_hint,
        ).render()

    fitted = fit_to_budget(render, limits, approximate_tokens)
    return TrajectoryPayload(
        rollout_id=rollout.rollout_id,
        text=fitted.rendering,
        size_chars=len(fitted.rendering),
        size_tokens=fitted.tokens,
        over_budget=fitted.over_budget,
    )
