"""SkillLibrary: operations, limit, hashing, diff, atomic saving."""

from __future__ import annotations

from pathlib import Path

import pytest

from grse_graph.errors import SkillError
from grse_graph.skills import SKILL_FILE, Skill, SkillLibrary
from grse_graph.skills.diff import library_diff


def _skill(name: str, body: str = "Do the thing.") -> Skill:
    return Skill(name=name, description=f"Skill {name}.", body=body)


def test_skills_are_kept_sorted_by_name() -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("c"), _skill("a"), _skill("b")])
    assert library.names() == ["a", "b", "c"]
    assert library.add(_skill("aa")).names() == ["a", "aa", "b", "c"]


def test_operations_return_new_libraries() -> None:
    library = SkillLibrary.empty("reasoner")
    added = library.add(_skill("a")).add(_skill("b"))
    assert library.names() == []
    assert added.names() == ["a", "b"]
    replaced = added.replace(_skill("a", "New body."))
    assert replaced.get("a").body == "New body."
    assert added.get("a").body == "Do the thing."
    assert replaced.remove("b").names() == ["a"]
    assert len(added) == 2 and added.has("a") and not added.has("z")


def test_add_duplicate_and_unknown_names_are_errors() -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("a")])
    with pytest.raises(SkillError, match="library 'reasoner': a skill named 'a' already exists"):
        library.add(_skill("a"))
    with pytest.raises(SkillError, match="no skill named 'z'"):
        library.replace(_skill("z"))
    with pytest.raises(SkillError, match="no skill named 'z'"):
        library.remove("z")
    with pytest.raises(SkillError, match="no skill named 'z'"):
        library.get("z")


def test_duplicate_names_on_construction_are_errors() -> None:
    with pytest.raises(SkillError, match="duplicate skill name 'a'"):
        SkillLibrary.build("reasoner", [_skill("a"), _skill("a")])


def test_limit_is_enforced() -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("a"), _skill("b")], limit=2)
    with pytest.raises(SkillError, match="at its limit of 2 skills"):
        library.add(_skill("c"))
    with pytest.raises(SkillError, match="3 skills, over the library limit of 2"):
        SkillLibrary.build("reasoner", [_skill("a"), _skill("b"), _skill("c")], limit=2)
    assert library.replace(_skill("a", "x")).limit == 2


def test_merge_replaces_named_skills_by_one() -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("a"), _skill("b"), _skill("c")])
    merged = library.merge(["a", "b"], _skill("a-and-b"))
    assert merged.names() == ["a-and-b", "c"]
    assert library.merge(["a", "b"], _skill("a")).names() == ["a", "c"]
    with pytest.raises(SkillError, match="already taken"):
        library.merge(["a", "b"], _skill("c"))
    with pytest.raises(SkillError, match="no skill named 'z'"):
        library.merge(["a", "z"], _skill("m"))
    with pytest.raises(SkillError, match="at least two"):
        library.merge(["a", "a"], _skill("m"))


def test_content_hash_is_stable_and_order_independent() -> None:
    one = SkillLibrary(agent="retriever", skills=[_skill("a"), _skill("b")])
    two = SkillLibrary(agent="reasoner", skills=[_skill("b"), _skill("a")], limit=4)
    assert one.content_hash() == two.content_hash()
    # A fixed value: the hash must not depend on the process (no salted hashing) or on Python
    # object identity; changing the scheme invalidates recorded hashes and must be deliberate.
    assert one.content_hash() == "771f806f67f42de941ac48f14e8a6a5582a5170aab4729cffe154d7f38668469"
    assert one.replace(_skill("a", "changed")).content_hash() != one.content_hash()
    assert one.replace(_skill("a").with_utility(0.5)).content_hash() == one.content_hash()
    assert SkillLibrary.empty("a").content_hash() != one.content_hash()


def _diff(old: SkillLibrary, new: SkillLibrary) -> str:
    return library_diff(
        {s.name: s for s in old.skills}, {s.name: s for s in new.skills}, "old", "new"
    )


def test_diff_reports_added_removed_and_changed() -> None:
    old = SkillLibrary(agent="reasoner", skills=[_skill("keep"), _skill("gone"), _skill("edit")])
    new = old.remove("gone").add(_skill("fresh")).replace(_skill("edit", "Do it better."))
    text = _diff(old, new)
    assert "added: fresh\nremoved: gone\nchanged: edit\n" in text
    assert "=== added: fresh\n--- /dev/null\n+++ b/fresh/SKILL.md\n" in text
    assert "=== removed: gone\n--- a/gone/SKILL.md\n+++ /dev/null\n" in text
    assert "-Do the thing.\n+Do it better.\n" in text
    assert "keep" not in text.split("\n", 5)[5]
    assert _diff(old, old).endswith("no differences\n")


def test_diff_shows_resource_changes() -> None:
    old = SkillLibrary(
        agent="reasoner",
        skills=[
            Skill(
                name="a",
                description="d",
                resources={"references/r.md": b"one\n", "assets/b": b"\xff"},
            )
        ],
    )
    new = old.replace(
        Skill(
            name="a", description="d", resources={"references/r.md": b"two\n", "assets/b": b"\xfe"}
        )
    )
    text = _diff(old, new)
    assert "--- a/a/references/r.md\n+++ b/a/references/r.md\n" in text
    assert "-one\n+two\n" in text
    assert "Binary resource a/assets/b differs: 1 bytes" in text


def test_save_and_load(tmp_path: Path) -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("a"), _skill("b")], limit=3)
    library.save(tmp_path / "lib")
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == ["a", "b"]
    assert SkillLibrary.load(tmp_path / "lib", agent="reasoner", limit=3) == library
    with pytest.raises(SkillError, match="over the library limit of 1"):
        SkillLibrary.load(tmp_path / "lib", agent="reasoner", limit=1)


def test_empty_folder_is_an_empty_library(tmp_path: Path) -> None:
    assert SkillLibrary.load(tmp_path, agent="reasoner").skills == []
    with pytest.raises(SkillError, match="does not exist"):
        SkillLibrary.load(tmp_path / "missing", agent="reasoner")


def test_removed_skills_disappear_from_disk(tmp_path: Path) -> None:
    library = SkillLibrary(agent="reasoner", skills=[_skill("a"), _skill("b")])
    library.save(tmp_path / "lib")
    library.remove("a").save(tmp_path / "lib")
    assert sorted(p.name for p in (tmp_path / "lib").iterdir()) == ["b"]


def test_unchanged_library_and_unchanged_skills_keep_their_bytes(tmp_path: Path) -> None:
    path = tmp_path / "lib"
    path.mkdir()
    (path / "a").mkdir()
    hand_written = "---\nname: a\ndescription: 'Skill a.'\n---\nDo the thing.\n"
    (path / "a" / SKILL_FILE).write_text(hand_written, encoding="utf-8")
    library = SkillLibrary.load(path, agent="reasoner")
    inode = (path / "a" / SKILL_FILE).stat().st_ino
    library.save(path)
    assert (path / "a" / SKILL_FILE).stat().st_ino == inode  # not rewritten at all
    library.add(_skill("b")).save(path)
    assert (path / "a" / SKILL_FILE).read_text(encoding="utf-8") == hand_written


def test_save_refuses_to_replace_a_folder_with_foreign_content(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("mine", encoding="utf-8")
    with pytest.raises(SkillError, match="not a skill folder; refusing"):
        SkillLibrary(agent="reasoner", skills=[_skill("a")]).save(tmp_path)
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == "mine"


def test_crash_during_save_leaves_the_old_library_intact(tmp_path: Path) -> None:
    path = tmp_path / "lib"
    old = SkillLibrary(agent="reasoner", skills=[_skill("a"), _skill("b")])
    old.save(path)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    written: list[Path] = []

    def crash_after_two_files(target: Path, data: bytes) -> None:
        if len(written) == 2:
            raise OSError("simulated crash")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written.append(target)

    new = SkillLibrary(agent="reasoner", skills=[_skill("a", "new"), _skill("c"), _skill("d")])
    with pytest.raises(OSError, match="simulated crash"):
        new.save(path, writer=crash_after_two_files)
    assert len(written) == 2
    assert SkillLibrary.load(path, agent="reasoner") == old
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lib"]  # no temporary left behind


def test_json_round_trip_for_run_folders() -> None:
    library = SkillLibrary(
        agent="reasoner",
        limit=3,
        skills=[Skill(name="a", description="d", resources={"assets/x.bin": b"\xff\x00"})],
    )
    assert SkillLibrary.model_validate_json(library.model_dump_json()) == library
