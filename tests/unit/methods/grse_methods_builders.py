"""Small builders for the methods tests: skills, libraries, rollouts, critiques."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grse_graph.methods.grse.critic_schema import CheckedDiagnosis, CritiqueResult, count_diagnoses
from grse_graph.methods.plan import FailureDiagnosis, SkillCredit
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.tasks.base import Passage, TaskQuestion
from grse_graph.team.rollout import Rollout, Step, ToolCallRecord

PASSAGES = "[Passage 1] Paris\nParis is the capital of France.\n[Passage 2] Rome\nRome is in Italy."
TASK_INPUT = f"Question: What is the capital of France?\n\n{PASSAGES}"


def skill(name: str, body: str = "Step one.\nStep two.", **meta: str) -> Skill:
    return Skill(name=name, description=f"Use {name} when needed.", body=body, metadata=meta)


def library(agent: str, *skills: Skill, limit: int | None = None) -> SkillLibrary:
    return SkillLibrary(agent=agent, skills=list(skills), limit=limit)


def question(qid: str = "q1", category: str | None = None) -> TaskQuestion:
    return TaskQuestion(
        id=qid,
        question="What is the capital of France?",
        answer="Paris",
        category=category,
        passages=[
            Passage(title="Paris", sentences=["Paris is the capital of France."]),
            Passage(title="Rome", sentences=["Rome is in Italy."]),
        ],
    )


def two_agent_rollout(
    index: int,
    reward: float,
    *,
    qid: str = "q1",
    reader_skills: Sequence[str] = ("extract",),
    answerer_skills: Sequence[str] = (),
    invoked: Sequence[str] = (),
    system_prompts: tuple[str, str] = ("You read passages.", "You answer briefly."),
) -> Rollout:
    """A reader step (with a tool call) then an answerer step that quotes the reader output."""
    reader_out = f"The passages say Paris (attempt {index})."
    steps = [
        Step(
            index=0,
            agent="reader",
            system_prompt=system_prompts[0],
            input=TASK_INPUT,
            output=reader_out,
            tool_calls=[ToolCallRecord(name="grep", arguments={"q": "capital"}, result="Paris")],
            skills_present=list(reader_skills),
            skills_invoked=list(invoked),
        ),
        Step(
            index=1,
            agent="answerer",
            system_prompt=system_prompts[1],
            input=f"{TASK_INPUT}\n\nReader said: {reader_out}",
            output="Paris" if reward >= 1 else "Rome",
            skills_present=list(answerer_skills),
        ),
    ]
    return Rollout(
        rollout_id=f"{qid}-{index}",
        question_id=qid,
        group_index=index,
        steps=steps,
        answer=steps[-1].output,
        reward=reward,
    )


def credit(agent: str = "reader", skill_id: str = "extract", **kw: Any) -> SkillCredit:
    fields: dict[str, Any] = {
        "verdict": "harmful",
        "evidence": "r2.s1 ignored the passage",
        "suggested_refinement": "",
        "utility": -0.5,
        "redundant_with": [],
        "conflicts_with": [],
    }
    fields.update(kw)
    return SkillCredit(agent=agent, skill_id=skill_id, **fields)


def diagnosis(**kw: Any) -> FailureDiagnosis:
    fields: dict[str, Any] = {
        "agent": "reader",
        "skill_id": "extract",
        "failure_type": "skill_defect",
        "failed_refs": ["r2.s1"],
        "successful_refs": ["r1.s1"],
        "explanation": "picked the wrong passage",
        "correction": "quote the passage that names the capital",
        "action": "refine",
    }
    fields.update(kw)
    return FailureDiagnosis(**fields)


def critique(
    qid: str,
    *,
    credits: Sequence[SkillCredit] = (),
    diagnoses: Sequence[FailureDiagnosis] = (),
    status: str = "accepted",
    category: str | None = None,
) -> CritiqueResult:
    checked = [CheckedDiagnosis(diagnosis=d, status=status) for d in diagnoses]  # type: ignore[arg-type]
    return CritiqueResult(
        question_id=qid,
        category=category,
        credits=list(credits),
        diagnoses=checked,
        counts=count_diagnoses(checked),
    )
