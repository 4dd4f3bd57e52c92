"""Table 9: each learned skill typed by the critic model at temperature 0, one primary type of a
fixed list per skill, given its name, description and body (the paper's coding, grse.txt:381).
A reply that names no label is kept as `unparsed` (counted, never guessed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from grse_graph.llm import SamplingSettings
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.skills import SkillLibrary

from .outcome import SkillType

UNPARSED = "unparsed"
TYPING_MAX_TOKENS = 32

MEANINGS = {
    "format": "how the final answer looks: its length, wording or normalisation",
    "retrieval": "how to search for evidence or widen what was found",
    "verification": "checking that an answer rests on the evidence",
    "reasoning": "a procedure that infers the answer, such as date arithmetic or aggregation",
    "abstention": "when to answer and when to decline, rules against declining included",
    "generic": "advice that names no concrete procedure",
}
"""What each of the paper's six types covers (its skill coding, grse.txt:381), shown to the
typing model; a label of another list is shown without a meaning."""
ABBREVIATIONS = {
    "format": "Fmt",
    "retrieval": "Retr",
    "verification": "Verif",
    "reasoning": "Reas",
    "abstention": "Abst",
    "generic": "Generic",
}
"""Table 9's column of each type (the paper's Fmt ... Abst; it labelled no skill generic)."""

PROMPT = """You sort the skills of an agent team by their primary purpose.
Types:
{types}
Read the skill below and reply with exactly one type name from the list, nothing else.

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


def describe(labels: Sequence[str]) -> str:
    """The types as the prompt lists them, one a line with its meaning where known."""
    return "\n".join(
        f"- {label}: {MEANINGS[label]}" if label in MEANINGS else f"- {label}" for label in labels
    )


def skill_words(description: str, body: str) -> int:
    """A skill's length as Table 9 counts it: the words of its description and body."""
    return len(description.split()) + len(body.split())


def column(label: str) -> str:
    """Table 9's column label of a type."""
    return ABBREVIATIONS.get(label, label)


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
                types=describe(labels),
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
                    words=skill_words(skill.description, skill.body),
                    label=parse_label(reply, labels),
                    reply=reply.strip()[:200],
                )
            )
    return types
