"""Small builders for the MASkills tests: skills, libraries, trajectories, credits, records."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grse_graph.methods.maskills.record import MaskillsRecord
from grse_graph.methods.maskills.schema import AgentResidual, MaskillsCredit, TrajectoryCredit
from grse_graph.methods.maskills.trace import build_skill_trace
from grse_graph.skills import Skill, SkillLibrary, render_inline
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord

CONTEXT = "Question: What is the capital of France?\n\n[Passage 1] Paris\nParis is the capital."


def skill(name: str, body: str = "Step one.\nStep two.", **meta: str) -> Skill:
    return Skill(name=name, description=f"Use {name} when needed.", body=body, metadata=meta)


def library(agent: str, *skills: Skill, limit: int | None = None) -> SkillLibrary:
    return SkillLibrary(agent=agent, skills=list(skills), limit=limit)


def question(qid: str = "q1") -> TaskQuestion:
    return TaskQuestion(id=qid, question="What is the capital of France?", answer="Paris")


def trajectory(
    libraries: dict[str, SkillLibrary],
    *,
    reward: float = 0.0,
    qid: str = "q1",
    outputs: Sequence[str] = ("The passage says Paris.", "Answer: Paris"),
    loaded: Sequence[Sequence[str]] = ((), ()),
    rollout_id: str | None = None,
) -> Rollout:
    """One trajectory: agents of `libraries` in order, each one step with inline skills."""
    steps = []
    for i, (agent, lib) in enumerate(libraries.items()):
        steps.append(
            Step(
                index=i,
                agent=agent,
                system_prompt=render_inline(f"You are the {agent}.", lib),
                input=CONTEXT if i == 0 else f"{CONTEXT}\n\nEarlier: {outputs[i - 1]}",
                output=outputs[i],
                tool_calls=[ToolCallRecord(name="grep", arguments={"q": "x"}, result="SECRET")],
                skills_present=lib.names(),
                skills_invoked=list(loaded[i]),
            )
        )
    return Rollout(
        rollout_id=rollout_id or f"it1-{qid}-g0",
        question_id=qid,
        steps=steps,
        answer=outputs[-1].removeprefix("Answer: "),
        reward=reward,
        metrics={"f1": reward},
    )


def credit(
    agent: str = "reader",
    skill_id: str = "extract",
    *,
    verdict: str = "helped",
    delta: float = 0.5,
    edit: str = "",
    evidence: str = "it quoted the passage",
    redundant_with: Sequence[str] = (),
    conflicts_with: Sequence[str] = (),
) -> MaskillsCredit:
    return MaskillsCredit(
        agent=agent,
        skill_id=skill_id,
        evidence=evidence,
        verdict=verdict,  # type: ignore[arg-type]
        utility_delta=delta,
        suggested_edit=edit,
        redundant_with=list(redundant_with),
        conflicts_with=list(conflicts_with),
    )


def residual(
    agent: str, summary: str = "", *, needs: bool = False, missing: str = ""
) -> AgentResidual:
    return AgentResidual(
        agent=agent, summary=summary, needs_new_skill=needs, missing_capability=missing
    )


def record(
    rollout: Rollout,
    credits: Sequence[MaskillsCredit] = (),
    residuals: Sequence[AgentResidual] = (),
    *,
    error: str | None = None,
    iteration: int = 1,
) -> MaskillsRecord:
    result = (
        None
        if error is not None
        else TrajectoryCredit(credits=list(credits), residuals=list(residuals))
    )
    return MaskillsRecord(
        iteration=iteration,
        unit_id=f"{rollout.rollout_id}-credit",
        question_id=rollout.question_id,
        rollout_ids=[rollout.rollout_id],
        rewards=[rollout.reward],
        trace=build_skill_trace(rollout),
        result=result,
        error=error,
    )


def args(model: Any) -> dict[str, Any]:
    return model.model_dump(mode="json")
