"""Every kind of bad input gives exactly one precise, one-line error naming the file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from grse_graph.errors import SkillError
from grse_graph.skills import (
    MAX_RESOURCE_BYTES,
    MAX_SKILL_MD_BYTES,
    Skill,
    SkillLibrary,
    validate_path,
)

BROKEN = Path(__file__).parents[2] / "fixtures" / "skills" / "broken"

CASES = {
    "no-front-matter": ("SKILL.md:1", "missing front matter"),
    "unclosed-front-matter": ("SKILL.md", "no closing '---' line"),
    "malformed-yaml": ("SKILL.md:3", "malformed YAML front matter"),
    "missing-description": ("SKILL.md", "missing the required field 'description'"),
    "empty-description": ("SKILL.md", "description is empty"),
    "description-too-long": ("SKILL.md", "over the limit of 1024"),
    "Invalid_Name": ("SKILL.md", "invalid name 'Invalid_Name'"),
    "double--hyphen": ("SKILL.md", "invalid name 'double--hyphen'"),
    "name-mismatch": ("SKILL.md", "'another-name' does not match its folder name"),
    "duplicate-key": ("SKILL.md:4", "duplicate key 'description'"),
    "unknown-field": ("SKILL.md", "unknown front-matter field 'version'"),
    "missing-skill-md": ("SKILL.md", "missing (every skill folder needs a SKILL.md)"),
    "bad-utility": ("SKILL.md", "grse-utility='high' must be a number in [-1, 1]"),
    "metadata-not-strings": ("SKILL.md", "metadata must map strings to strings"),
    "resource-dir-is-file": ("references", "must be a folder"),
}


def _assert_one_precise_error(folder: Path, where: str, problem: str) -> None:
    problems = validate_path(folder)
    assert len(problems) == 1, problems
    line = problems[0]
    assert "\n" not in line
    assert line.startswith(f"{folder}/{where}"), line
    assert problem in line
    with pytest.raises(SkillError) as raised:
        Skill.load(folder)
    assert str(raised.value) == line


def test_fixture_folder_has_exactly_the_listed_cases() -> None:
    assert sorted(p.name for p in BROKEN.iterdir()) == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_fixture_gives_one_precise_error(case: str) -> None:
    where, problem = CASES[case]
    _assert_one_precise_error(BROKEN / case, where, problem)


def test_broken_folder_as_a_library_lists_one_problem_per_skill() -> None:
    problems = validate_path(BROKEN)
    assert len(problems) == len(CASES)
    for case in CASES:
        assert sum(f"/broken/{case}/" in line for line in problems) == 1
    with pytest.raises(SkillError):
        SkillLibrary.load(BROKEN, agent="reasoner")


def _write_skill(folder: Path, body: str = "Body.") -> Path:
    folder.mkdir(parents=True)
    text = f"---\nname: {folder.name}\ndescription: A test skill.\n---\n\n{body}\n"
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    return folder


def test_non_utf8_skill_file(tmp_path: Path) -> None:
    folder = tmp_path / "latin-one"
    folder.mkdir()
    data = b"---\nname: latin-one\ndescription: caf\xe9\n---\n"
    (folder / "SKILL.md").write_bytes(data)
    offset = data.index(b"\xe9")
    _assert_one_precise_error(
        folder, "SKILL.md", f"not valid UTF-8 text (bad byte at offset {offset})"
    )


def test_oversized_skill_file(tmp_path: Path) -> None:
    folder = _write_skill(tmp_path / "too-big", body="x" * MAX_SKILL_MD_BYTES)
    _assert_one_precise_error(folder, "SKILL.md", f"over the limit of {MAX_SKILL_MD_BYTES} bytes")


def test_oversized_resource(tmp_path: Path) -> None:
    folder = _write_skill(tmp_path / "big-resource")
    (folder / "assets").mkdir()
    (folder / "assets" / "blob.bin").write_bytes(b"\0" * (MAX_RESOURCE_BYTES + 1))
    _assert_one_precise_error(folder, "assets/blob.bin", "resource file is 1048577 bytes")


def test_resource_symlink_pointing_outside(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("outside", encoding="utf-8")
    folder = _write_skill(tmp_path / "library" / "leaky")
    (folder / "references").mkdir()
    os.symlink(secret, folder / "references" / "secret.txt")
    _assert_one_precise_error(
        folder, "references/secret.txt", "symlink points outside the skill folder"
    )


def test_resource_folder_symlink_with_dotdot_pointing_outside(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    folder = _write_skill(tmp_path / "library" / "dotdot")
    os.symlink("../../../elsewhere", folder / "scripts")
    _assert_one_precise_error(folder, "scripts", "symlink points outside the skill folder")


def test_skill_folder_symlink_pointing_outside_the_library(tmp_path: Path) -> None:
    outside = _write_skill(tmp_path / "outside" / "borrowed")
    library = tmp_path / "library"
    library.mkdir()
    os.symlink(outside, library / "borrowed")
    problems = validate_path(library)
    assert problems == [
        f"{library}/borrowed: symlink points outside the library folder ({outside})"
    ]


def test_symlink_inside_the_skill_is_followed(tmp_path: Path) -> None:
    folder = _write_skill(tmp_path / "linked")
    (folder / "references").mkdir()
    (folder / "references" / "a.md").write_text("shared", encoding="utf-8")
    os.symlink("a.md", folder / "references" / "b.md")
    assert Skill.load(folder).resources == {
        "references/a.md": b"shared",
        "references/b.md": b"shared",
    }


@pytest.mark.parametrize(
    "path",
    ["../escape.md", "/etc/passwd", "references/../../x", "references//x", ".hidden/x", "SKILL.md"],
)
def test_resource_paths_escaping_or_hidden_are_rejected(path: str) -> None:
    with pytest.raises(SkillError) as raised:
        Skill.build("operator", name="ok", description="d", resources={path: b"x"})
    assert str(raised.value).startswith("operator: resources: resource path")


@pytest.mark.parametrize("name", ["../up", "a/b", "-lead", "trail-", "UPPER", "a" * 65, ""])
def test_names_that_are_invalid_or_escape_are_rejected(name: str) -> None:
    with pytest.raises(SkillError, match="invalid name"):
        Skill.build(name=name, description="d")


def test_save_refuses_a_folder_whose_name_differs(tmp_path: Path) -> None:
    skill = Skill(name="real-name", description="d")
    with pytest.raises(SkillError, match="must equal the skill name"):
        skill.save(tmp_path / "other")
    assert not (tmp_path / "other").exists()


def test_direct_construction_raises_validation_error() -> None:
    with pytest.raises(ValidationError):
        Skill(name="Bad", description="d")
