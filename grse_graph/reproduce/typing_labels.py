"""Table 9: each learned skill typed by the critic model at temperature 0, one label of a fixed
list per skill. A reply that names no label is kept as `unparsed` (counted, never guessed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.llm import SamplingSettings
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.skills import SkillLibrary

from .outcome import SkillType

UNPARSED = "unparsed"
TYPING_MAX_TOKENS = 32

PROMPT = """You sort the skills of an agent team into types.
Types: {types}.
Read the skill below and reply with exactly one type from the list, nothing else.

Agent: {agent}
Skill name: {name}
Description: {description}
Body:
{body}

Type:"""


def parse_label(reply: str, labels: Sequence[str]) -> str:
    """The first label the reply names (case-insensitive, earliest position), else
    `UNPARSED`."""
    text = reply.lower()
    found = [(text.find(label.lower()), label) for label in labels if label.lower() in text]
    return min(found)[1] if found else UNPARSED


async def type_skills(
    provider: ChatModelProvider,
    libraries: Mapping[str, SkillLibrary],
    labels: Sequence[str],
) -> list[SkillType]:
    """One `SkillType` per skill of every library, in agent and skill order."""
    model = provider.chat(
        "critic", sampling=SamplingSettings.greedy(), max_tokens=TYPING_MAX_TOKENS
    )
    types: list[SkillType] = []
    for agent in sorted(libraries):
        for skill in libraries[agent].skills:
            prompt = PROMPT.format(
                types=", ".join(labels),
                agent=agent,
                name=skill.name,
                description=skill.description,
                body=skill.body,
            )
            message = await model.ainvoke(prompt)
            reply = message.text if isinstance(message.text, str) else str(message.content)
            types.append(
                SkillType(
                    agent=agent,
                    skill=skill.name,
                    words=len(skill.body.split()),
                    label=parse_label(reply, labels),
                    reply=reply.strip()[:200],
                )
            )
    return types
