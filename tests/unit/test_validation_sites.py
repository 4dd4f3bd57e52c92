"""The sites that turn a pydantic ValidationError into a message all go through
`describe_validation_error`: each names the failing field, including where a validator's own
message did not (the skills code used to drop the location of every validator error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from grse_graph.errors import ConfigError, SkillError, TaskError
from grse_graph.llm.config import load_config
from grse_graph.skills import Skill, SkillLibrary
from grse_graph.tasks.planted import load_planted


def _skill(name: str) -> Skill:
    return Skill.build("test", name=name, description="d", body="b")


def test_a_library_validator_error_names_the_skills_field() -> None:
    with pytest.raises(SkillError) as raised:
        SkillLibrary.build("reader", [_skill("a"), _skill("a")])
    assert str(raised.value) == "library 'reader': skills: duplicate skill name 'a'"


def test_a_skill_error_uses_the_front_matter_name_of_the_field() -> None:
    with pytest.raises(SkillError) as raised:
        Skill.build("op", name="ok", description="d", allowed_tools=["grep", "grep"])
    assert str(raised.value) == "op: allowed-tools: allowed-tools lists a tool twice"


def test_a_planted_file_names_the_nested_field_and_every_error(tmp_path: Path) -> None:
    path = tmp_path / "planted.json"
    entry = {"agent": "reader", "skill": "BAD NAME", "kind": "helpful", "note": "n"}
    path.write_text(json.dumps({"task": "demo", "pack": "p", "skills": [entry]}))
    with pytest.raises(TaskError) as raised:
        load_planted(path)
    assert str(raised.value).startswith(f"{path}: skills.0.skill: String should match pattern")


def test_a_config_error_names_the_field_its_value_and_where_it_came_from() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(env={}, overrides={"actor.temperature": 5.0})
    message = str(raised.value)
    assert message.startswith("config actor.temperature: Input should be less than or equal to")
    assert message.endswith("(got 5.0 from override actor.temperature)")
