"""The demo's planted starting library (repair study) and the planted-library file format."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from grse_graph.errors import TaskError
from grse_graph.skills import SKILL_FILE, validate_path
from grse_graph.tasks.planted import PlantedLibrary, demo_planted, load_planted
from grse_graph.team.spec import FIRST_AGENT, SECOND_AGENT

DATA = Path(__file__).parents[2] / "grse_graph" / "tasks" / "demo_data"
# The kinds are for reports only: the critic and optimizer must not be told by the skills.
KIND_WORDS = re.compile(r"helpful|harmful|planted", re.IGNORECASE)


@pytest.fixture(scope="module")
def planted() -> PlantedLibrary:
    return demo_planted()


def copy_planted(tmp_path: Path) -> Path:
    """A writable copy of the bundled planted file and its pack; returns the file."""
    shutil.copytree(DATA / "planted", tmp_path / "planted")
    shutil.copy(DATA / "planted.json", tmp_path / "planted.json")
    return tmp_path / "planted.json"


def rewrite(path: Path, change: Any) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(json.dumps(raw), encoding="utf-8")


def one_line_error(path: Path) -> str:
    with pytest.raises(TaskError) as caught:
        load_planted(path).libraries()
    message = str(caught.value)
    assert message and "\n" not in message
    return message


def test_bundled_library_loads(planted: PlantedLibrary) -> None:
    assert planted.task == "demo"
    assert planted.source.name == "planted.json"
    libraries = planted.libraries()
    assert set(libraries) == {FIRST_AGENT, SECOND_AGENT}
    for agent, library in libraries.items():
        kinds = Counter(planted.kind_of(agent, name) for name in library.names())
        assert kinds["helpful"] == 1
        assert kinds["harmful"] >= 1
        assert None not in kinds
    assert planted.kind_of(FIRST_AGENT, "no-such-skill") is None


def test_composition_counts_each_agents_kinds(planted: PlantedLibrary) -> None:
    text = planted.composition()
    for agent in (FIRST_AGENT, SECOND_AGENT):
        kinds = Counter(e.kind for e in planted.skills if e.agent == agent)
        harmful = kinds["harmful"]
        noun = "skills" if harmful > 1 else "skill"
        assert f"{agent}: {kinds['helpful']} helpful and {harmful} harmful {noun}" in text
    one = planted.model_copy(update={"skills": planted.skills[:1]})
    assert one.composition() == f"{planted.skills[0].agent}: 1 {planted.skills[0].kind} skill"


def test_pack_validates_and_is_exactly_a_pack(planted: PlantedLibrary) -> None:
    assert validate_path(planted.pack_path()) == []
    assert (planted.pack_path() / "manifest.json").is_file()
    assert not (planted.pack_path() / "planted.json").exists()


def test_skill_files_do_not_reveal_kinds(planted: PlantedLibrary) -> None:
    files = sorted(planted.pack_path().rglob("*"))
    skill_files = [f for f in files if f.name == SKILL_FILE]
    assert len(skill_files) == len(planted.skills)
    for path in files:
        if path.is_file():
            text = path.read_text(encoding="utf-8")
            assert not KIND_WORDS.search(text), path
        assert not KIND_WORDS.search(path.name), path


def test_skills_are_short(planted: PlantedLibrary) -> None:
    # The actor is a 0.5B model: long skills are not followed.
    for library in planted.libraries().values():
        for skill in library.skills:
            assert len(skill.body.split()) <= 120, skill.name


def test_listed_skill_missing_from_pack(tmp_path: Path) -> None:
    path = copy_planted(tmp_path)
    rewrite(
        path,
        lambda raw: raw["skills"].append(
            {"agent": FIRST_AGENT, "skill": "ghost-skill", "kind": "harmful", "note": "x"}
        ),
    )
    assert "'ghost-skill'" in one_line_error(path)


def test_pack_skill_not_listed(tmp_path: Path) -> None:
    path = copy_planted(tmp_path)
    rewrite(path, lambda raw: raw["skills"].pop(0))
    assert "is not listed" in one_line_error(path)


def test_bad_kind(tmp_path: Path) -> None:
    path = copy_planted(tmp_path)
    rewrite(path, lambda raw: raw["skills"][0].update(kind="neutral"))
    assert "skills.0.kind" in one_line_error(path)


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw.pop("task"),
        lambda raw: raw.update(pack="/abs/planted"),
        lambda raw: raw.update(extra=1),
        lambda raw: raw["skills"].append(dict(raw["skills"][0])),
        lambda raw: raw["skills"][0].update(note="two\nlines"),
    ],
)
def test_invalid_file(tmp_path: Path, change: Any) -> None:
    path = copy_planted(tmp_path)
    rewrite(path, change)
    one_line_error(path)


def test_missing_or_broken_file(tmp_path: Path) -> None:
    assert "not found" in one_line_error(tmp_path / "absent.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json", encoding="utf-8")
    one_line_error(broken)
    broken.write_text("[]", encoding="utf-8")
    one_line_error(broken)


def test_missing_or_edited_pack(tmp_path: Path) -> None:
    path = copy_planted(tmp_path)
    skill = next((tmp_path / "planted").rglob(SKILL_FILE))
    skill.write_text(skill.read_text(encoding="utf-8") + "\nextra\n", encoding="utf-8")
    assert "pack 'planted'" in one_line_error(path)
    shutil.rmtree(tmp_path / "planted")
    assert "pack 'planted'" in one_line_error(path)
