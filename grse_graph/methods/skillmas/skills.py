"""SkillMAS's skill bookkeeping: lineage ids, origins, content validation, lexical similarity,
dedup, per-step selection and policy cards.

Q^s is keyed by a lineage id kept in SKILL.md metadata (`skillmas-id`), so copies made by
restructuring share the global and task entries while Q(s, a) stays per agent (row 12). A skill
without `skillmas-origin` is a seed (a starting-library skill): never refined, pruned or
overwritten.

Similarity is the lexical Jaccard of content-word sets (the code's fallback scorer; there is no
embedding model on the CPU engine, and it is deterministic). Selection (spec §7, rows 9-11)
ranks by 0.7 x normalised similarity + 0.3 x normalised utility + a capped UCB bonus, each
component normalised over the candidates by z-score then logistic sigmoid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from grse_graph.skills import Skill, SkillLibrary

from .tables import SkillUtilityTable

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
CARD_LIMIT, CARD_CHARS = 4, 1600
SIMILARITY_WEIGHT, UTILITY_WEIGHT = 0.7, 0.3
_TOKEN = re.compile(r"[a-z0-9]+")
_STOP_WORDS_TEXT = (
    "a an and are as at be by for from has have how in is it its of on or that the this to was "
    "were what when where which who why will with you your do does did not no"
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def lineage_id(skill: Skill, agent: str) -> str:
    """The Q^s key of a skill (its `skillmas-id`, else `<agent>/<name>`)."""
    return skill.metadata.get(LINEAGE_KEY) or f"{agent}/{skill.name}"


def is_seed(skill: Skill) -> bool:
    """Seed skills (no SkillMAS origin) are never refined, pruned or overwritten."""
    return ORIGIN_KEY not in skill.metadata


def slug(text: str) -> str:
    """Lower-case words of `text` joined by hyphens ("task" when none)."""
    return "-".join(_TOKEN.findall(text.lower())) or "task"


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


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens of 2+ characters, stop words removed."""
    return {t for t in _TOKEN.findall(text.lower()) if len(t) >= 2 and t not in STOP_WORDS}


def jaccard(a: str | set[str], b: str | set[str]) -> float:
    """Jaccard of two texts' content-word sets (0 when both are empty)."""
    left = a if isinstance(a, set) else content_words(a)
    right = b if isinstance(b, set) else content_words(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def near_duplicate(
    description: str, body: str, libraries: Mapping[str, SkillLibrary], ignore: str | None = None
) -> tuple[str, float] | None:
    """The most similar existing skill (agent/name, Jaccard) when it reaches 0.45."""
    words = content_words(f"{description}\n{body}")
    best: tuple[str, float] | None = None
    for agent, library in libraries.items():
        for skill in library.skills:
            ref = f"{agent}/{skill.name}"
            score = jaccard(words, f"{skill.description}\n{skill.body}")
            if ref != ignore and score >= DEDUP_THRESHOLD and (best is None or score > best[1]):
                best = (ref, score)
    return best


def policy_cards(
    libraries: Mapping[str, SkillLibrary],
    status: Mapping[str, Mapping[str, str]],
    query: str,
) -> list[Skill]:
    """The active (seed and validated) skills best matching `query` by |shared tokens| /
    sqrt(|query| |card|), score 0 dropped (spec §5.9: repair priors)."""

    def tokens(text: str) -> set[str]:
        return set(re.findall(r"[a-z0-9_]{2,}", text.lower()))

    q = tokens(query)
    scored: list[tuple[float, Skill]] = []
    for agent, library in libraries.items():
        for skill in library.skills:
            card = tokens(f"{skill.description}\n{skill.body}")
            if status.get(agent, {}).get(skill.name, "active") != "active" or not q or not card:
                continue
            score = len(q & card) / math.sqrt(len(q) * len(card))
            if score > 0:
                scored.append((score, skill))
    scored.sort(key=lambda pair: -pair[0])
    return [skill for _, skill in scored[:CARD_LIMIT]]


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


def normalised(values: Sequence[float]) -> list[float]:
    """z-score then sigmoid; 0.5 for every value with one value or a spread below 1e-8."""
    mean = sum(values) / len(values) if values else 0.0
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values)) if values else 0.0
    if len(values) < 2 or std < 1e-8:
        return [0.5 for _ in values]
    return [1.0 / (1.0 + math.exp(-(v - mean) / std)) for v in values]


def score_candidates(
    similarities: Sequence[float], utilities: Sequence[float], bonuses: Sequence[float]
) -> list[float]:
    """0.7 sim~ + 0.3 q~ + ucb for aligned candidate lists."""
    sims, qs = normalised(similarities), normalised(utilities)
    return [
        SIMILARITY_WEIGHT * s + UTILITY_WEIGHT * q + u
        for s, q, u in zip(sims, qs, bonuses, strict=True)
    ]


class ScoredSkill(BaseModel):
    """One candidate's selection score and its raw similarity and UCB bonus."""

    name: str
    skill_id: str
    similarity: float
    ucb: float
    score: float


def matched_text(skill: Skill) -> str:
    """What selection matches a skill on: description, `## When to use` section, tools."""
    marker = skill.body.lower().find("## when to use")
    when = skill.body[marker:].split("\n## ", 2)[0] if marker >= 0 else ""
    return " ".join([skill.description, when, " ".join(skill.allowed_tools)])


def select_skills(
    skills: Sequence[Skill],
    *,
    query: str,
    task_type: str,
    agent: str,
    table: SkillUtilityTable,
    k: int,
    lineage: Mapping[str, str],
) -> list[ScoredSkill]:
    """The top min(k, |skills|) candidates by score (ties keep library order). `lineage` maps a
    skill name to its Q^s id; query = task type + question text."""
    words = content_words(query)
    ids = [lineage.get(s.name, s.name) for s in skills]
    sims = [jaccard(words, matched_text(s)) for s in skills]
    bonuses = [table.ucb(i) for i in ids]
    qs = [table.combined(i, task_type, agent) for i in ids]
    scored = [
        ScoredSkill(name=s.name, skill_id=i, similarity=sim, ucb=b, score=score)
        for s, i, sim, b, score in zip(
            skills, ids, sims, bonuses, score_candidates(sims, qs, bonuses), strict=True
        )
    ]
    return sorted(scored, key=lambda c: -c.score)[: max(0, k)]
