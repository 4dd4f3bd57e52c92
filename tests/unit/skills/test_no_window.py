"""No window, no stray state: folder swaps that never leave the live folder absent, exec bits that
survive every copy, and one-line errors for a huge bookkeeping count, a SKILL.md that is a
folder, and `Skill.load('.')` inside the skill's own folder."""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from grse_graph.errors import SkillError
from grse_graph.skills import Skill, SkillLibrary, export_pack, import_pack
from grse_graph.skills import files as skill_files
from grse_graph.skills.diff import skill_diff

LINUX = sys.platform.startswith("linux")
SCRIPT = "scripts/run.sh"


class Killed(BaseException):
    """Stands for SIGKILL: nothing after the raising step runs (a `BaseException`, like one)."""


def _tool_skill(description: str = "Run the tool.", executable: bool = True) -> Skill:
    return Skill.build(
        name="tool",
        description=description,
        body="Run scripts/run.sh.",
        resources={SCRIPT: b"#!/bin/sh\necho hi\n", "scripts/data.txt": b"x\n"},
        executables=(SCRIPT,) if executable else (),
    )


def _runs(path: Path) -> bool:
    return bool(os.stat(path).st_mode & stat.S_IXUSR)


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ----- 1. the swap: one exchange, the live folder never absent ------------------------------


@pytest.fixture()
def fresh_renameat2() -> Iterator[None]:
    """Forget the cached libc lookup before and after a test that fakes libc."""
    skill_files._renameat2.cache_clear()
    yield
    skill_files._renameat2.cache_clear()


def _two_folders(tmp: Path) -> tuple[Path, Path]:
    first, second = tmp / "first", tmp / "second"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir()
        (folder / "f").write_text(text, encoding="utf-8")
    return first, second


@pytest.mark.skipif(not LINUX, reason="renameat2 is Linux only")
def test_exchange_paths_swaps_two_folders_in_one_step(tmp_path: Path) -> None:
    first, second = _two_folders(tmp_path)
    assert skill_files.exchange_paths(first, second) is True
    assert (first / "f").read_text(encoding="utf-8") == "two"
    assert (second / "f").read_text(encoding="utf-8") == "one"
    with pytest.raises(FileNotFoundError):
        skill_files.exchange_paths(first, tmp_path / "missing")


@pytest.mark.skipif(
    not LINUX or platform.machine() not in ("x86_64", "aarch64"), reason="raw syscall numbers"
)
def test_exchange_uses_the_raw_syscall_when_libc_has_no_wrapper(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_renameat2: None
) -> None:
    libc = ctypes.CDLL(None, use_errno=True)

    class OldLibc:
        """A libc without `renameat2` (glibc < 2.28, some musl builds)."""

        syscall = libc.syscall

    monkeypatch.setattr(skill_files.ctypes, "CDLL", lambda *args, **kwargs: OldLibc())
    first, second = _two_folders(tmp_path)
    assert skill_files.exchange_paths(first, second) is True
    assert (first / "f").read_text(encoding="utf-8") == "two"


@pytest.mark.parametrize("code", [errno.EINVAL, errno.ENOSYS])
def test_a_refused_exchange_falls_back_to_two_renames(
    code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refusing(old: bytes, new: bytes, flags: int) -> int:
        ctypes.set_errno(code)
        return -1

    monkeypatch.setattr(skill_files, "_renameat2", lambda: refusing)
    first, second = _two_folders(tmp_path)
    assert skill_files.exchange_paths(first, second) is False
    assert (first / "f").read_text(encoding="utf-8") == "one"  # nothing changed
    old = SkillLibrary(agent="reasoner", skills=[Skill(name="a", description="old")])
    new = SkillLibrary(agent="reasoner", skills=[Skill(name="b", description="new")])
    old.save(tmp_path / "lib")
    new.save(tmp_path / "lib")
    assert SkillLibrary.load(tmp_path / "lib", agent="reasoner") == new
    assert _hidden(tmp_path) == []


def _skill_site(tmp: Path, version: int) -> Path:
    _tool_skill(f"Run the tool, version {version}.").save(tmp / "tool")
    return tmp / "tool"


def _library_site(tmp: Path, version: int) -> Path:
    skill = Skill(name="a", description=f"version {version}")
    SkillLibrary(agent="reasoner", skills=[skill]).save(tmp / "lib")
    return tmp / "lib"


def _pack_site(tmp: Path, version: int) -> Path:
    skill = Skill(name="a", description=f"version {version}")
    return export_pack({"reasoner": SkillLibrary(agent="reasoner", skills=[skill])}, tmp / "pack")


SITES: dict[str, Callable[[Path, int], Path]] = {
    "skill-save": _skill_site,
    "library-save": _library_site,
    "pack-export": _pack_site,
}


def _version_on_disk(site: str, live: Path) -> str:
    if site == "skill-save":
        return Skill.load(live).description
    if site == "library-save":
        return SkillLibrary.load(live, agent="reasoner").get("a").description
    return import_pack(live)["reasoner"].get("a").description


@pytest.mark.skipif(not LINUX, reason="the exchange is Linux only")
@pytest.mark.parametrize("site", sorted(SITES))
def test_every_swap_site_never_leaves_the_live_folder_absent(
    site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = SITES[site](tmp_path, 1)
    rename = os.rename
    absent_after: list[str] = []

    def watched_rename(source: str | Path, target: str | Path) -> None:
        rename(source, target)
        if not os.path.lexists(live):
            absent_after.append(f"{source} -> {target}")

    monkeypatch.setattr(os, "rename", watched_rename)
    SITES[site](tmp_path, 2)
    assert absent_after == []
    assert "version 2" in _version_on_disk(site, live)
    assert _hidden(tmp_path) == []  # the old folder is gone


@pytest.mark.skipif(not LINUX, reason="the exchange is Linux only")
@pytest.mark.parametrize("site", sorted(SITES))
def test_a_kill_right_after_the_exchange_leaves_the_new_folder_live(
    site: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = SITES[site](tmp_path, 1)
    exchanges: list[tuple[Path, Path]] = []
    exchange = skill_files.exchange_paths

    def recorded(first: Path, second: Path) -> bool:
        exchanges.append((first, second))
        return exchange(first, second)

    def killed(folder: Path) -> None:
        raise Killed

    monkeypatch.setattr(skill_files, "exchange_paths", recorded)
    monkeypatch.setattr(skill_files, "_remove_old", killed)
    with pytest.raises(Killed):
        SITES[site](tmp_path, 2)
    assert [second for _, second in exchanges] == [live]
    assert "version 2" in _version_on_disk(site, live)
    monkeypatch.undo()
    skill_files.recover_leftovers(tmp_path)  # what the next load or save does first
    assert _hidden(tmp_path) == []
    assert "version 2" in _version_on_disk(site, live)


def test_without_an_exchange_the_two_renames_still_swap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(skill_files, "exchange_paths", lambda first, second: False)
    for site, make in SITES.items():
        folder = tmp_path / site
        folder.mkdir()
        live = make(folder, 1)
        make(folder, 2)
        assert "version 2" in _version_on_disk(site, live)
        assert _hidden(folder) == []


# ----- 2. exec bits survive export, import and save -----------------------------------------


def _hand_made_tool(folder: Path) -> Path:
    """A skill folder written by hand: an executable script and a plain data file."""
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: tool\ndescription: Run the tool.\n---\n\nRun scripts/run.sh.\n",
        encoding="utf-8",
    )
    (folder / SCRIPT).write_bytes(b"#!/bin/sh\necho hi\n")
    (folder / "scripts/data.txt").write_bytes(b"x\n")
    os.chmod(folder / SCRIPT, 0o755)
    os.chmod(folder / "scripts/data.txt", 0o644)
    return folder


def test_exec_bit_survives_skill_save(tmp_path: Path) -> None:
    skill = Skill.load(_hand_made_tool(tmp_path / "hand" / "tool"))
    assert skill.executables == (SCRIPT,)
    skill.save(tmp_path / "copy" / "tool")
    assert _runs(tmp_path / "copy" / "tool" / SCRIPT)
    assert not _runs(tmp_path / "copy" / "tool" / "scripts/data.txt")
    assert Skill.load(tmp_path / "copy" / "tool") == skill


def test_exec_bit_survives_library_save_also_for_unchanged_skills(tmp_path: Path) -> None:
    skill = Skill.load(_hand_made_tool(tmp_path / "hand" / "tool"))
    library = SkillLibrary(agent="reasoner", skills=[skill])
    library.save(tmp_path / "lib")
    assert _runs(tmp_path / "lib" / "tool" / SCRIPT)
    # Adding a skill rewrites the library; the unchanged `tool` keeps its bytes and its mode.
    library.add(Skill(name="other", description="d")).save(tmp_path / "lib")
    assert _runs(tmp_path / "lib" / "tool" / SCRIPT)
    assert not _runs(tmp_path / "lib" / "tool" / "scripts/data.txt")


def test_exec_bit_survives_export_and_import(tmp_path: Path) -> None:
    skill = Skill.load(_hand_made_tool(tmp_path / "hand" / "tool"))
    pack = export_pack({"reasoner": SkillLibrary(agent="reasoner", skills=[skill])}, tmp_path / "p")
    assert _runs(pack / "reasoner" / "skills" / "tool" / SCRIPT)
    imported = import_pack(pack)["reasoner"].get("tool")
    assert imported == skill
    imported.save(tmp_path / "back" / "tool")
    assert _runs(tmp_path / "back" / "tool" / SCRIPT)


def test_the_exec_bit_is_part_of_the_skill(tmp_path: Path) -> None:
    runnable, plain = _tool_skill(), _tool_skill(executable=False)
    assert runnable != plain and runnable.content_hash() != plain.content_hash()
    assert "Mode of tool/scripts/run.sh: not executable -> executable" in skill_diff(
        plain, runnable
    )
    # A skill that loses its exec bit on disk is rewritten by the next save.
    runnable.save(tmp_path / "tool")
    os.chmod(tmp_path / "tool" / SCRIPT, 0o644)
    runnable.save(tmp_path / "tool")
    assert _runs(tmp_path / "tool" / SCRIPT)
    with pytest.raises(SkillError, match="is not one of the skill's resource files"):
        Skill.build(name="tool", description="d", executables=("scripts/missing.sh",))


# ----- 3. a 5000-digit bookkeeping count -----------------------------------------------------


@pytest.mark.parametrize("key", ["grse-invocations", "grse-iteration"])
def test_a_5000_digit_count_is_one_line_skill_error(key: str, tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / "SKILL.md").write_text(
        f"---\nname: big\ndescription: d\nmetadata:\n  {key}: '{'7' * 5000}'\n---\n",
        encoding="utf-8",
    )
    with pytest.raises(SkillError) as raised:
        Skill.load(folder)
    message = str(raised.value)
    assert message.startswith(f"{folder / 'SKILL.md'}: metadata: {key}=")
    assert "has 5000 digits, over the limit of 18" in message
    assert "\n" not in message and len(message) < 300


# ----- 4. SKILL.md that is a folder ---------------------------------------------------------


@pytest.mark.parametrize("with_resources", [False, True])
def test_save_over_a_skill_md_folder_is_one_line_skill_error(
    with_resources: bool, tmp_path: Path
) -> None:
    folder = tmp_path / "tool"
    (folder / "SKILL.md").mkdir(parents=True)
    (folder / "SKILL.md" / "mine.txt").write_text("mine", encoding="utf-8")
    skill = _tool_skill() if with_resources else Skill(name="tool", description="d")
    with pytest.raises(SkillError) as raised:
        skill.save(folder)
    assert str(raised.value) == (
        f"{folder / 'SKILL.md'}: a folder where a file belongs; refusing to overwrite {folder}"
    )
    assert (folder / "SKILL.md" / "mine.txt").read_text(encoding="utf-8") == "mine"
    with pytest.raises(SkillError, match="a folder where a file belongs; refusing"):
        SkillLibrary(agent="reasoner", skills=[skill]).save(tmp_path)


# ----- 5. Skill.load('.') ----------------------------------------------------------------------


def test_load_dot_inside_the_skill_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    skill = Skill(name="inside-me", description="d", body="b")
    skill.save(tmp_path / "inside-me")
    # A leftover of an interrupted save lies beside the folder, in its parent.
    (tmp_path / ".inside-me.tmp-0123456789ab").mkdir()
    monkeypatch.chdir(tmp_path / "inside-me")
    assert Skill.load(".") == skill
    assert _hidden(tmp_path) == []
