"""Per-step skill selection (spec §7, §9.2 rows 9-11): k skills of an agent's library by
0.7 x normalised similarity + 0.3 x normalised utility + a capped UCB bonus.

Similarity is the lexical Jaccard of content-word sets (the code's fallback scorer; there is no
embedding model on the CPU engine, and it is deterministic). Each component is normalised over
the candidates by z-score then logistic sigmoid (0.5 for all with one candidate or no spread).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from pydantic import BaseModel

from grse_graph.skills import Skill

from .tables import SkillUtilityTable

SIMILARITY_WEIGHT = 0.7
UTILITY_WEIGHT = 0.3
_TOKEN = re.compile(r"[a-z0-9]+")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "you",
        "your",
        "do",
        "does",
        "did",
        "not",
        "no",
    ]
)


def content_words(text: str) -> set[str]:
    """Lower-cased alphanumeric tokens of 2+ characters, stop words removed."""
    return {t for t in _TOKEN.findall(text.lower()) if len(t) >= 2 and t not in STOP_WORDS}


def jaccard(a: str | set[str], b: str | set[str]) -> float:
    """Jaccard of two texts' content-word sets (0 when both are empty)."""
    left = a if isinstance(a, set) else content_words(a)
    right = b if isinstance(b, set) else content_words(b)
    union = left | right
    return len(left & right) / len(union) if union else 0.0


def skill_text(skill: Skill) -> str:
    """What a skill is matched on: description, applicability, tools (not the whole body)."""
    when = ""
    body = skill.body
    marker = body.lower().find("## when to use")
    if marker >= 0:
        when = body[marker:].split("\n## ", 2)[0]
    return " ".join([skill.description, when, " ".join(skill.allowed_tools)])


def normalised(values: Sequence[float]) -> list[float]:
    """z-score then sigmoid; 0.5 for every value with one value or a spread below 1e-8."""
    if len(values) < 2:
        return [0.5 for _ in values]
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    if std < 1e-8:
        return [0.5 for _ in values]
    return [1.0 / (1.0 + math.exp(-(v - mean) / std)) for v in values]


class ScoredSkill(BaseModel):
    """One candidate's selection score and its parts."""

    name: str
    skill_id: str
    similarity: float
    similarity_term: float
    utility_term: float
    ucb: float
    score: float


def score_candidates(
    similarities: Sequence[float],
    utilities: Sequence[float],
    bonuses: Sequence[float],
) -> list[float]:
    """0.7 sim~ + 0.3 q~ + ucb for aligned candidate lists."""
    sims, qs = normalised(similarities), normalised(utilities)
    return [
        SIMILARITY_WEIGHT * s + UTILITY_WEIGHT * q + u
        for s, q, u in zip(sims, qs, bonuses, strict=True)
    ]


def select_skills(
    skills: Sequence[Skill],
    *,
    query: str,
    task_type: str,
    agent: str,
    table: SkillUtilityTable,
    k: int,
    lineage: dict[str, str],
) -> list[ScoredSkill]:
    """The top min(k, |skills|) candidates by score (ties keep library order). `lineage` maps a
    skill name to its Q^s id; query = task type + question text."""
    if not skills or k <= 0:
        return []
    words = content_words(query)
    ids = [lineage.get(s.name, s.name) for s in skills]
    sims = [jaccard(words, skill_text(s)) for s in skills]
    qs = [table.combined(i, task_type, agent) for i in ids]
    bonuses = [table.ucb(i) for i in ids]
    scores = score_candidates(sims, qs, bonuses)
    normal_sims, normal_qs = normalised(sims), normalised(qs)
    scored = [
        ScoredSkill(
            name=s.name,
            skill_id=i,
            similarity=sim,
            similarity_term=SIMILARITY_WEIGHT * ns,
            utility_term=UTILITY_WEIGHT * nq,
            ucb=b,
            score=score,
        )
        for s, i, sim, ns, nq, b, score in zip(
            skills, ids, sims, normal_sims, normal_qs, bonuses, scores, strict=True
        )
    ]
    order = sorted(range(len(scored)), key=lambda j: -scored[j].score)
    return [scored[j] for j in order[: min(k, len(scored))]]
