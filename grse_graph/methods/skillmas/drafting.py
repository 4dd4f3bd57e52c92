"""How SkillMAS's operators write: the optimizer's reply schemas, the prompt pieces they
share, the skill spec a draft becomes, and the checks a new skill passes before the pool
(content validation and Jaccard dedup, spec §5.7-§5.8)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from grse_graph.errors import GrseError, ModelRequestRefused, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.methods.operators.ask import ask_optimizer
from grse_graph.skills import Skill

from .skills import (
    LINEAGE_KEY,
    ORIGIN_KEY,
    TAGS_KEY,
    TASK_KEY,
    content_problems,
    near_duplicate,
    policy_cards,
)
from .work import EvolutionAction, EvolutionWork

M = TypeVar("M", bound=BaseModel)

SYSTEM = "You write reusable skills (SKILL.md bodies) for a question-answering team."
BODY_FORMAT = (
    "Write the skill body in markdown with exactly these sections: `## When to use` "
    "(applicability), `## Steps` (numbered procedure), `## Guards` (preconditions and don'ts), "
    "`## Checks` (what to verify before answering). No front matter."
)
# A refused request or an unusable reply costs one skill this round; anything else (an
# unreachable endpoint) stops the run, as it does for every method.
RECOVERABLE: tuple[type[GrseError], ...] = (StructuredOutputError, ModelRequestRefused)


class DrawnSkill(BaseModel):
    """What a writing call returns (the owner agent field is added per team)."""

    description: str = Field(description="what the skill does and when to use it, one sentence")
    body: str = Field(description="the markdown body")


class RefinedBody(BaseModel):
    body: str = Field(description="the improved markdown body")


class NarrowedDescription(BaseModel):
    description: str = Field(description="a narrower description: exactly when the skill applies")


def owner_schema(agents: Sequence[str]) -> type[DrawnSkill]:
    """`DrawnSkill` with an `agent` field limited to the team's agents (LEARN names the
    owner itself)."""
    owner: Any = Literal[tuple(agents)]
    return create_model(
        "OwnedSkillDraft",
        __base__=DrawnSkill,
        agent=(owner, Field(description="the team agent whose step this skill guides")),
    )


async def write(
    provider: ChatModelProvider, schema: type[M], prompt: str, temperature: float, max_tokens: int
) -> M | str:
    """The optimizer's reply to `prompt`, or why there is none."""
    reply = await ask_optimizer(
        provider,
        schema,
        [SystemMessage(SYSTEM), HumanMessage(prompt)],
        max_tokens=max_tokens,
        sampling=SamplingSettings(temperature=temperature),
        recoverable=RECOVERABLE,
    )
    return f"{type(reply).__name__}: {reply}" if isinstance(reply, GrseError) else reply


def cards_block(work: EvolutionWork, query: str) -> list[str]:
    """The policy cards for `query` as prompt lines (none when no card matches)."""
    cards = policy_cards(work.libraries, work.status, query)
    if not cards:
        return []
    lines = ["Reference skills (adapt, do not copy):"]
    lines += [f"### {c.title}\n{c.content}" for c in cards]
    return lines


def new_skill(
    name: str,
    draft: DrawnSkill,
    agent: str,
    tau: str,
    origin: str,
    tags: Sequence[str] = (),
) -> Skill:
    """The SKILL.md a draft becomes: its lineage, origin, task type and tags in metadata
    (`SkillError` when it is not a valid skill)."""
    metadata = {LINEAGE_KEY: f"{agent}/{name}", ORIGIN_KEY: origin, TASK_KEY: tau}
    if tags:
        metadata[TAGS_KEY] = ",".join(tags)
    return Skill.build(
        name=name,
        description=" ".join(draft.description.split())[:900] or f"Strategy for {tau} questions",
        body=draft.body.strip(),
        metadata=metadata,
    )


def admit(
    work: EvolutionWork,
    agent: str,
    skill: Skill,
    action: EvolutionAction,
    ignore: str | None = None,
) -> tuple[bool, EvolutionAction]:
    """Content validation and dedup (against every library but `ignore`, a revised copy's
    parent), then the pool. Returns whether the skill got in and the action to record
    (`action`, or its rejection with the reason)."""
    problems = content_problems(skill.body)
    duplicate = near_duplicate(skill.description, skill.body, work.libraries, ignore=ignore)
    if problems or duplicate is not None:
        why = "; ".join(problems)
        if duplicate is not None and not why:
            why = f"near duplicate of {duplicate[0]} ({duplicate[1]:.2f})"
        return False, action.model_copy(update={"kind": "rejected", "detail": why})
    work.add_shadow(agent, skill)
    return True, action
