"""The usage judge (spec §9.2 row 7): for a step that had selected skills but said nothing
about them (no invocation, no `Skills used:` line), one structured critic call marks which
selected skills the output actually followed (a subset, possibly empty)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.llm.structured import astructured_call
from grse_graph.skills import SkillLibrary
from grse_graph.team.rollout import Step

JUDGE_SYSTEM = (
    "You check which of an agent's skills its response actually followed. A skill counts only "
    "if the response visibly applies its steps, guards or checks; being available is not use. "
    "Return the names of the followed skills (an empty list when none was followed)."
)


class UsedSkills(BaseModel):
    used: list[str] = Field(description="names of the followed skills, or empty")


def used_schema(selected: Sequence[str]) -> type[UsedSkills]:
    """`UsedSkills` whose names are limited to the step's selected skills."""
    names: Any = Literal[tuple(selected)]
    return create_model(
        "FollowedSkills",
        __base__=UsedSkills,
        used=(list[names], Field(description="names of the followed skills, or empty")),
    )


def judge_prompt(step: Step, library: SkillLibrary, chars: int = 1500) -> str:
    lines = [f"Agent: {step.agent}", "Skills it was given:"]
    for name in step.skills_present:
        if library.has(name):
            lines.append(f"### {name}\n{library.get(name).body[:800]}")
    lines += ["", "Its response:", step.output[:chars]]
    return "\n".join(lines)


async def judge_step(
    step: Step, library: SkillLibrary, provider: ChatModelProvider, max_tokens: int | None
) -> list[str]:
    """The selected skills the step followed (raises StructuredOutputError/ModelRequestRefused)."""
    model = provider.chat("critic", sampling=SamplingSettings(), max_tokens=max_tokens)
    messages = [SystemMessage(JUDGE_SYSTEM), HumanMessage(judge_prompt(step, library))]
    result = await astructured_call(model, used_schema(step.skills_present), messages)
    return [s for s in step.skills_present if s in set(result.used)]
