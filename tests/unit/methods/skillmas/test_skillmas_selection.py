"""§9.4: selection scores (0.7 normalised similarity + 0.3 normalised utility + UCB)."""

from __future__ import annotations

import pytest

from grse_graph.methods.skillmas.skills import (
    jaccard,
    normalised,
    score_candidates,
    select_skills,
)
from grse_graph.methods.skillmas.tables import SkillUtilityTable
from grse_graph.skills import Skill


def test_two_candidates_worked_example() -> None:
    assert normalised([0.2, 0.4]) == pytest.approx([0.269, 0.731], abs=1e-3)
    assert normalised([0.5, 0.5]) == [0.5, 0.5]
    scores = score_candidates([0.2, 0.4], [0.5, 0.5], [0.0, 0.0])
    assert scores == pytest.approx([0.338, 0.662], abs=1e-3)


def test_single_candidate_normalises_to_half() -> None:
    assert normalised([0.9]) == [0.5]


def test_jaccard_ignores_stop_words_and_short_tokens() -> None:
    assert jaccard("the colour of the sky", "sky colour a") == 1.0
    assert jaccard("", "") == 0.0


def _skill(name: str, description: str) -> Skill:
    return Skill.build(name=name, description=description, body="## Steps\n1. Do it.")


def test_select_skills_ranks_by_similarity_at_equal_utility_and_caps_k() -> None:
    skills = [
        _skill("dates", "Resolve relative dates in conversations"),
        _skill("colours", "Answer colour questions with the colour word"),
        _skill("names", "Spell person names exactly"),
    ]
    chosen = select_skills(
        skills,
        query="single-hop what colour is the item",
        task_type="single-hop",
        agent="reasoner",
        table=SkillUtilityTable(),
        k=2,
        lineage={},
    )
    assert chosen[0].name == "colours"
    assert len(chosen) == 2
    assert all(c.ucb == 0.0 for c in chosen)


def test_utility_breaks_similarity_ties() -> None:
    skills = [_skill("first", "Answer questions"), _skill("second", "Answer questions")]
    table = SkillUtilityTable().update("r/second", "t", "r", 1.0).update("r/first", "t", "r", 0.0)
    chosen = select_skills(
        skills,
        query="t answer",
        task_type="t",
        agent="r",
        table=table,
        k=1,
        lineage={"first": "r/first", "second": "r/second"},
    )
    assert [c.name for c in chosen] == ["second"]
