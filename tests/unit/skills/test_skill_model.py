"""The Skill value: parsing, writing, bookkeeping accessors, hashing."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from grse_graph.errors import SkillError
from grse_graph.skills import (
    AGENT_KEY,
    PARENT_HASH_KEY,
    UTILITY_KEY,
    Skill,
    approx_tokens,
    slugify_name,
)

TEXT = """---
name: short-answer
description: Write the shortest exact answer span.
license: Apache-2.0
allowed-tools: grep read_file
metadata:
  author: team
  grse-utility: '0.25'
---

# Short answer

Give the span only.
"""


def test_parse_reads_every_field() -> None:
    skill = Skill.parse(TEXT, "x/SKILL.md")
    assert skill.name == "short-answer"
    assert skill.description == "Write the shortest exact answer span."
    assert skill.license == "Apache-2.0"
    assert skill.allowed_tools == ["grep", "read_file"]
    assert skill.metadata == {"author": "team", "grse-utility": "0.25"}
    assert skill.body == "# Short answer\n\nGive the span only."
    assert skill.utility == 0.25


def test_written_text_is_exactly_the_canonical_form() -> None:
    assert Skill.parse(TEXT, "x").to_markdown() == TEXT


def test_front_matter_is_real_yaml_in_fixed_key_order() -> None:
    skill = Skill(
        name="a",
        description="yes",
        compatibility="needs grep",
        license="MIT",
        allowed_tools=["t"],
        metadata={"z": "1", "a": "true"},
    )
    front = skill.to_markdown().split("---\n")[1]
    loaded = yaml.safe_load(front)
    assert list(loaded) == [
        "name",
        "description",
        "license",
        "compatibility",
        "allowed-tools",
        "metadata",
    ]
    # Values that YAML would read as other types are quoted, so they stay strings.
    assert loaded["description"] == "yes" and loaded["metadata"] == {"a": "true", "z": "1"}
    assert list(loaded["metadata"]) == ["a", "z"]


def test_scalars_stay_strings_when_read() -> None:
    text = "---\nname: a\ndescription: yes\nmetadata:\n  version: 1.0\n---\n"
    skill = Skill.parse(text, "x")
    assert skill.description == "yes"
    assert skill.metadata == {"version": "1.0"}


def test_allowed_tools_as_yaml_list_is_accepted() -> None:
    text = "---\nname: a\ndescription: d\nallowed-tools:\n  - grep\n  - read\n---\n"
    skill = Skill.parse(text, "x")
    assert skill.allowed_tools == ["grep", "read"]
    assert "allowed-tools: grep read\n" in skill.to_markdown()


def test_windows_line_endings_and_bom_are_read() -> None:
    text = "\ufeff---\r\nname: a\r\ndescription: d\r\n---\r\n\r\nline one\r\nline two\r\n"
    assert Skill.parse(text, "x").body == "line one\nline two"


def test_body_may_contain_delimiter_lines() -> None:
    skill = Skill(name="a", description="d", body="before\n---\nafter")
    assert Skill.parse(skill.to_markdown(), "x") == skill


def test_empty_body_round_trips() -> None:
    skill = Skill(name="a", description="d")
    assert skill.to_markdown() == "---\nname: a\ndescription: d\n---\n"
    assert Skill.parse(skill.to_markdown(), "x") == skill


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"description": "a --- b"}, "contains '---'"),
        ({"description": "bell\x07"}, "forbidden character"),
        ({"body": "line\u2028sep"}, "forbidden character"),
        ({"allowed_tools": ["two words"]}, "contains whitespace"),
        ({"allowed_tools": ["a", "a"]}, "lists a tool twice"),
        ({"license": " "}, "license is empty"),
        ({"compatibility": "x" * 501}, "over the limit of 500"),
        ({"metadata": {"grse-utiltiy": "0.5"}}, "not a known bookkeeping key"),
        ({"metadata": {"grse-utility": "1.5"}}, "must be a number in [-1, 1]"),
        ({"metadata": {"grse-utility": "nan"}}, "must be a number in [-1, 1]"),
        ({"metadata": {"grse-invocations": "-1"}}, "non-negative whole number"),
        ({"metadata": {"grse-parent-hash": "abc"}}, "sha256"),
        ({"metadata": {"grse-agent": "Agent 1"}}, "must be an agent name"),
        ({"resources": {"references/a": b"x", "references/a/b": b"y"}}, "inside another resource"),
    ],
)
def test_invalid_values_are_rejected_with_one_line(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(SkillError) as raised:
        Skill.build("op", **{"name": "a", "description": "d", **fields})
    message = str(raised.value)
    assert message.startswith("op: ") and problem in message and "\n" not in message


def test_oversized_skill_is_rejected_in_memory() -> None:
    with pytest.raises(SkillError, match=r"SKILL.md would be .* over the limit of 65536 bytes"):
        Skill.build(name="a", description="d", body="x" * 70_000)


def test_bookkeeping_accessors_and_with_helpers() -> None:
    skill = Skill(name="a", description="d")
    assert (skill.utility, skill.provenance, skill.invocations, skill.iteration) == (
        None,
        None,
        0,
        None,
    )
    assert (skill.parent_hash, skill.agent) == (None, None)
    parent = "ab" * 32
    owned = Skill(
        name="a", description="d", metadata={PARENT_HASH_KEY: parent, AGENT_KEY: "reasoner"}
    )
    updated = (
        owned.with_utility(-0.4).with_provenance("induced").with_invocations(7).with_iteration(3)
    )
    assert updated.utility == -0.4
    assert updated.provenance == "induced"
    assert updated.invocations == 7
    assert updated.iteration == 3
    assert updated.parent_hash == parent
    assert updated.agent == "reasoner"
    assert skill.metadata == {}  # the original is unchanged
    assert updated.with_utility(None).utility is None
    assert Skill.parse(updated.to_markdown(), "x") == updated


def test_with_helpers_validate() -> None:
    skill = Skill(name="a", description="d")
    with pytest.raises(ValueError, match="must be a number in"):
        skill.with_utility(2.0)
    with pytest.raises(ValueError, match="description is empty"):
        skill.with_description("  ")


def test_content_hash_ignores_bookkeeping_but_not_content() -> None:
    skill = Skill(name="a", description="d", body="b", metadata={"author": "x"})
    same = skill.with_utility(0.9).with_invocations(4)
    assert same.content_hash() == skill.content_hash()
    assert skill.with_body("other").content_hash() != skill.content_hash()
    assert skill.with_description("e").content_hash() != skill.content_hash()
    changed_meta = Skill(name="a", description="d", body="b", metadata={"author": "y"})
    assert changed_meta.content_hash() != skill.content_hash()
    with_resource = Skill(name="a", description="d", body="b", resources={"assets/x": b"1"})
    assert with_resource.content_hash() != Skill(name="a", description="d", body="b").content_hash()


def test_derive_records_the_parent_hash() -> None:
    parent = Skill(name="a", description="d", body="old")
    child = parent.derive(body="new")
    assert child.body == "new"
    assert child.metadata[PARENT_HASH_KEY] == parent.content_hash()


def test_utility_is_stored_as_exact_string() -> None:
    assert Skill(name="a", description="d").with_utility(0.1).metadata[UTILITY_KEY] == "0.1"


def test_slugify_name() -> None:
    assert slugify_name("Answer Formatting!") == "answer-formatting"
    assert slugify_name("  Multi--hop  Bridge ") == "multi-hop-bridge"
    with pytest.raises(ValueError, match="invalid name"):
        slugify_name("!!!")


def test_approx_tokens() -> None:
    assert approx_tokens("") == 0
    assert approx_tokens("abcd") == 1
    assert approx_tokens("abcde") == 2


def test_save_with_resources_then_without_removes_stale_files(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    Skill(name="a", description="d", resources={"scripts/run.py": b"print(1)"}).save(folder)
    assert (folder / "scripts" / "run.py").read_bytes() == b"print(1)"
    Skill(name="a", description="d", resources={"assets/x.bin": b"\0"}).save(folder)
    assert not (folder / "scripts").exists()
    assert Skill.load(folder).resources == {"assets/x.bin": b"\0"}


def test_hand_formatted_file_is_left_alone_when_equal(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    folder.mkdir()
    text = '---\nname: a\ndescription: "d"\n---\nbody\n'
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    Skill.load(folder).save(folder)
    assert (folder / "SKILL.md").read_text(encoding="utf-8") == text


def test_save_refuses_to_delete_foreign_content(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(SkillError, match="refusing to overwrite"):
        Skill(name="a", description="d").save(folder)
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "mine"


def test_failed_save_leaves_old_skill_intact(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    old = Skill(name="a", description="old", resources={"references/r.md": b"old"})
    old.save(folder)

    def crashing_writer(path: Path, data: bytes) -> None:
        if path.name == "r.md":
            raise OSError("disk full")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    new = Skill(name="a", description="new", resources={"references/r.md": b"new"})
    with pytest.raises(OSError, match="disk full"):
        new.save(folder, writer=crashing_writer)
    assert Skill.load(folder) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


def test_json_round_trip_carries_binary_resources() -> None:
    skill = Skill(name="a", description="d", resources={"assets/x.bin": b"\xff\x00"})
    assert Skill.model_validate_json(skill.model_dump_json()) == skill


def test_failed_single_file_save_leaves_old_file_and_no_temporary(tmp_path: Path) -> None:
    folder = tmp_path / "a"
    old = Skill(name="a", description="old", body="old body")
    old.save(folder)

    def crashing_writer(path: Path, data: bytes) -> None:
        path.write_bytes(data[:10])  # half-written, then the "crash"
        raise OSError("power cut")

    with pytest.raises(OSError, match="power cut"):
        old.with_body("new body").save(folder, writer=crashing_writer)
    assert Skill.load(folder) == old
    assert [p.name for p in folder.iterdir()] == ["SKILL.md"]


def test_leftover_temporary_files_of_a_killed_save_are_ignored(tmp_path: Path) -> None:
    skill = Skill(name="a", description="d")
    skill.save(tmp_path / "a")
    (tmp_path / "a" / ".SKILL.md.tmp-0123456789ab").write_bytes(b"---\nname: half")
    assert Skill.load(tmp_path / "a") == skill


def test_skills_are_hashable_consistently_with_equality() -> None:
    one = Skill(name="a", description="d", metadata={"x": "1", "y": "2"})
    two = Skill(name="a", description="d", metadata={"y": "2", "x": "1"})
    assert one == two and hash(one) == hash(two)
    assert len({one, two, one.with_body("b")}) == 2
