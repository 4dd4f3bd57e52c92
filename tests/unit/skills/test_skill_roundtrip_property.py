"""Property tests: any valid skill survives text and disk round trips exactly."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skill_strategies import skills

from grse_graph.skills import SKILL_FILE, Skill, SkillLibrary

# The machine is shared with other jobs: generation speed is not what these tests check.
RELAXED = [HealthCheck.too_slow]


@settings(suppress_health_check=RELAXED, deadline=None)
@given(skills())
def test_text_round_trip_is_exact(skill: Skill) -> None:
    text = skill.to_markdown()
    again = Skill.parse(text, "generated", skill.resources)
    assert again == skill
    assert again.to_markdown() == text
    assert again.content_hash() == skill.content_hash()


@settings(max_examples=40, deadline=None, suppress_health_check=RELAXED)
@given(skills())
def test_disk_round_trip_and_byte_identical_resave(skill: Skill) -> None:
    with tempfile.TemporaryDirectory() as root:
        folder = Path(root) / skill.name
        skill.save(folder)
        loaded = Skill.load(folder)
        assert loaded == skill
        before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        mtime = (folder / SKILL_FILE).stat().st_mtime_ns
        loaded.save(folder)
        after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
        assert after == before
        assert (folder / SKILL_FILE).stat().st_mtime_ns == mtime


@settings(max_examples=25, deadline=None, suppress_health_check=RELAXED)
@given(st.lists(skills(), max_size=4, unique_by=lambda s: s.name))
def test_library_disk_round_trip(items: list[Skill]) -> None:
    library = SkillLibrary(agent="reasoner", skills=items)
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / "library"
        library.save(path)
        loaded = SkillLibrary.load(path, agent="reasoner")
        assert loaded == library
        assert loaded.content_hash() == library.content_hash()
