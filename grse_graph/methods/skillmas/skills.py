"""SkillMAS's skill bookkeeping: lineage ids, origins, content validation, dedup, policy cards.

Q^s is keyed by a lineage id kept in SKILL.md metadata (`skillmas-id`), so copies made by
restructuring share the global and task entries while Q(s, a) stays per agent (row 12). A skill
without `skillmas-origin` is a seed (a starting-library skill): never refined, pruned or
overwritten.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

from pydantic import BaseModel, Field

from grse_graph.skills import Skill, SkillLibrary

from .selection import content_words, jaccard

LINEAGE_KEY = "skillmas-id"
ORIGIN_KEY = "skillmas-origin"
TASK_KEY = "skillmas-task"
TAGS_KEY = "skillmas-tags"
SKILL_EXEMPLAR = """## When to use
Questions that compare two named entities on one attribute (older, larger, first).

## Steps
1. Name both entities exactly as the question does.
2. Find the attribute for each one in the evidence and quote it.
3. Compare the two values and name the entity that wins the comparison.

## Guards
- Do not answer from memory when the evidence states the attribute.
- Do not compare values given in different units without converting them.

## Checks
- Both values were found and quoted; the answer is one of the two entities."""
"""A generic example of a well-structured skill, shown to LEARN (the code's `getSkillExemplar`)."""
MIN_WORDS = 30
DEDUP_THRESHOLD = 0.45
CARD_LIMIT = 4
CARD_CHARS = 1600


def lineage_id(skill: Skill, agent: str) -> str:
    """The Q^s key of a skill (its `skillmas-id`, else `<agent>/<name>`)."""
    return skill.metadata.get(LINEAGE_KEY) or f"{agent}/{skill.name}"


def lineage_map(library: SkillLibrary) -> dict[str, str]:
    """Skill name -> lineage id for one library."""
    return {s.name: lineage_id(s, library.agent) for s in library.skills}


def is_seed(skill: Skill) -> bool:
    """Seed skills (no SkillMAS origin) are never refined, pruned or overwritten."""
    return ORIGIN_KEY not in skill.metadata


def content_problems(body: str) -> list[str]:
    """The code's content checks without its 20-character-token rule (spec §5.7, 10.27)."""
    problems = []
    words = [w for w in re.split(r"\s+", body) if w and not w.startswith("#")]
    if len(words) < MIN_WORDS:
        problems.append(f"{len(words)} words (at least {MIN_WORDS})")
    if not re.search(r"^##\s+\S", body, re.MULTILINE):
        problems.append("no '## ' heading")
    if not re.search(r"\bsteps?\b|^\s*1[.)]", body, re.IGNORECASE | re.MULTILINE):
        problems.append("no steps section")
    return problems


def semantic_text(skill: Skill) -> str:
    return f"{skill.description}\n{skill.body}"


def near_duplicate(
    description: str, body: str, libraries: Mapping[str, SkillLibrary], ignore: str | None = None
) -> tuple[str, float] | None:
    """The most similar existing skill (agent/name, Jaccard) when it reaches 0.45."""
    words = content_words(f"{description}\n{body}")
    best: tuple[str, float] | None = None
    for agent, library in libraries.items():
        for skill in library.skills:
            ref = f"{agent}/{skill.name}"
            if ref == ignore:
                continue
            score = jaccard(words, semantic_text(skill))
            if score >= DEDUP_THRESHOLD and (best is None or score > best[1]):
                best = (ref, score)
    return best


class ParkedSkill(BaseModel):
    """A skill taken out of a library, kept as SKILL.md text so it can be put back (a revised
    copy's parent, a merged-away agent's library) when `drop_policy=demote` reverts a round.
    Resource files are not kept: SkillMAS's own skills have none."""

    agent: str
    markdown: str
    status: str = "active"
    replaced_by: str | None = Field(
        default=None, description="the promoted revised copy (agent/name) that disabled it"
    )

    @classmethod
    def of(
        cls, agent: str, skill: Skill, status: str = "active", replaced_by: str | None = None
    ) -> ParkedSkill:
        return cls(
            agent=agent, markdown=skill.to_markdown(), status=status, replaced_by=replaced_by
        )

    def skill(self) -> Skill:
        return Skill.parse(self.markdown, f"<parked skill of {self.agent}>")


class PolicyCard(BaseModel):
    """A repair prior from the library (seed and validated skills only)."""

    id: str
    title: str
    content: str


def policy_cards(
    libraries: Mapping[str, SkillLibrary],
    status: Mapping[str, Mapping[str, str]],
    query: str,
    limit: int = CARD_LIMIT,
) -> list[PolicyCard]:
    """Top cards by |shared tokens| / sqrt(|query| |card|) (score 0 dropped)."""
    q = set(re.findall(r"[a-z0-9_]{2,}", query.lower()))
    scored: list[tuple[float, PolicyCard]] = []
    for agent, library in libraries.items():
        for skill in library.skills:
            if status.get(agent, {}).get(skill.name, "active") != "active":
                continue
            source = "seed" if is_seed(skill) else "validated"
            tokens = set(re.findall(r"[a-z0-9_]{2,}", semantic_text(skill).lower()))
            if not q or not tokens:
                continue
            score = len(q & tokens) / math.sqrt(len(q) * len(tokens))
            if score > 0:
                card = PolicyCard(
                    id=f"{source}:{agent}/{skill.name}",
                    title=skill.description,
                    content=skill.body[:CARD_CHARS],
                )
                scored.append((score, card))
    scored.sort(key=lambda pair: -pair[0])
    return [card for _, card in scored[:limit]]


def slug(text: str) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())) or "task"
