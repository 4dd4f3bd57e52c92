"""One skill folder on disk: reading it through the boundary, and saving without losing files.

Reading: SKILL.md plus every other non-hidden file below the folder (the spec lets a skill carry
`forms.md`, `LICENSE.txt`, `helper.py` next to SKILL.md) become the skill's resources, within
the per-file, per-skill, file-count and depth caps. Hidden entries (editor files, interrupted
saves) are not part of the skill.

Saving replaces the folder only when nothing the save did not write would be lost: files under
references/, scripts/, assets/ of a skill that reads cleanly are the skill's own content (a new
value without them removes them, as documented); any other file the new value does not carry,
any hidden entry, or any problem reading the old folder makes the save refuse with one line.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from grse_graph.errors import SkillError

from .boundary import Boundary, decode_utf8, reading
from .files import (
    FileWriter,
    atomic_write,
    is_executable,
    is_save_leftover,
    recover_leftovers,
    replace_dir,
)
from .limits import (
    MAX_RESOURCE_BYTES,
    MAX_RESOURCE_DEPTH,
    MAX_SKILL_FILES,
    MAX_SKILL_MD_BYTES,
    MAX_SKILL_TOTAL_BYTES,
    RESOURCE_DIRS,
    SKILL_FILE,
)
from .model import Skill, check_resource_path
from .text import shown


@dataclass
class SkillScan:
    """What reading one skill folder found."""

    skill: Skill | None = None
    skill_md: bytes | None = None
    skill_problem: str | None = None  # a problem of SKILL.md itself (missing, invalid)
    problems: list[str] = field(default_factory=list)  # every other problem
    hidden: list[Path] = field(default_factory=list)  # hidden entries that are not leftovers
    files: dict[str, bytes] = field(default_factory=dict)
    executables: set[str] = field(default_factory=set)  # keys of `files` with the exec bit

    def all_problems(self) -> list[str]:
        """Every problem, the SKILL.md one first."""
        return ([self.skill_problem] if self.skill_problem else []) + self.problems


class _Walk:
    """The bounded walk over a skill folder's files (depth, count and total size caps)."""

    def __init__(self, directory: Path, boundary: Boundary, scan: SkillScan) -> None:
        self.directory = directory
        self.boundary = boundary
        self.scan = scan
        self.total = 0
        self.stopped = False

    def folder(self, folder: Path, ancestors: frozenset[Path], depth: int) -> None:
        try:
            entries = self.boundary.list(folder)
        except SkillError as error:
            self.scan.problems.append(str(error))
            return
        for child in entries:
            if self.stopped:
                return
            if child.name.startswith("."):
                if not is_save_leftover(child.name):
                    self.scan.hidden.append(child)
                continue
            if depth == 0 and child.name == SKILL_FILE:
                continue
            try:
                self.entry(child, ancestors, depth)
            except SkillError as error:
                self.scan.problems.append(str(error))
            except ValueError as error:
                self.scan.problems.append(f"{shown(child)}: {error}")

    def entry(self, child: Path, ancestors: frozenset[Path], depth: int) -> None:
        kind = self.boundary.kind(child)
        if kind == "folder":
            real = self.boundary.resolve(child)
            if real in ancestors:
                raise SkillError(f"{shown(child)}: symlink loop")
            if depth + 1 > MAX_RESOURCE_DEPTH:
                raise SkillError(
                    f"{shown(child)}: nested deeper than {MAX_RESOURCE_DEPTH} folders inside "
                    "the skill folder"
                )
            self.folder(child, ancestors | {real}, depth + 1)
            return
        if depth == 0 and child.name in RESOURCE_DIRS:
            raise SkillError(f"{shown(child)}: must be a folder")
        key = child.relative_to(self.directory).as_posix()
        check_resource_path(key)
        if len(self.scan.files) >= MAX_SKILL_FILES:
            self.stopped = True
            raise SkillError(
                f"{shown(self.directory)}: more than {MAX_SKILL_FILES} files in the skill folder"
            )
        data = self.boundary.read(child, MAX_RESOURCE_BYTES, "resource file")
        self.total += len(data)
        if self.total > MAX_SKILL_TOTAL_BYTES:
            self.stopped = True
            raise SkillError(
                f"{shown(self.directory)}: the skill's files total more than "
                f"{MAX_SKILL_TOTAL_BYTES} bytes"
            )
        self.scan.files[key] = data
        if is_executable(self.boundary.mode(child)):
            self.scan.executables.add(key)


def scan_skill_folder(directory: Path) -> SkillScan:
    """Read one skill folder through its own boundary, collecting every problem."""
    scan = SkillScan()
    try:
        boundary = Boundary(directory, "skill folder")
    except SkillError as error:
        missing = not os.path.lexists(directory) or not os.path.isdir(directory)
        scan.skill_problem = (
            f"{shown(directory)}: skill folder does not exist or is not a folder"
            if missing
            else str(error)
        )
        return scan
    _Walk(directory, boundary, scan).folder(directory, frozenset({boundary.real_root}), 0)
    if scan.problems and not os.access(boundary.real_root, os.R_OK | os.X_OK):
        return scan  # the folder itself cannot be listed: its line says so, SKILL.md is unknown
    skill_file = directory / SKILL_FILE
    try:
        if not boundary.exists(skill_file):
            raise SkillError(
                f"{shown(skill_file)}: missing (every skill folder needs a {SKILL_FILE})"
            )
        if boundary.kind(skill_file) != "file":
            raise SkillError(f"{shown(skill_file)}: a folder where a file belongs")
        scan.skill_md = boundary.read(skill_file, MAX_SKILL_MD_BYTES, SKILL_FILE)
        text = decode_utf8(scan.skill_md, skill_file)
        scan.skill = Skill.parse(text, shown(skill_file), scan.files, scan.executables)
    except SkillError as error:
        scan.skill_problem = str(error)
    if scan.skill is not None and scan.skill.name != directory.name:
        scan.skill_problem = (
            f"{shown(skill_file)}: name {scan.skill.name!r} does not match its folder name "
            f"{shown(directory.name)!r}"
        )
    return scan


def read_skill_folder(directory: Path) -> tuple[Skill | None, list[str]]:
    """Read a skill folder, collecting every problem found (one line each)."""
    scan = scan_skill_folder(directory)
    return scan.skill, scan.all_problems()


def named_folder(directory: Path) -> Path:
    """`directory`, made absolute when its path has no name of its own (`.`, `..`, `a/..`):
    the folder's real name is what a skill name must match, and its real parent is where the
    leftovers of an interrupted save lie."""
    if directory.name in ("", ".", ".."):
        return Path(os.path.abspath(directory))
    return directory


def load_skill(directory: Path) -> Skill:
    """`Skill.load`: recover leftovers of an interrupted save, then read strictly."""
    directory = named_folder(directory)
    with reading(directory.parent, "cannot recover an interrupted save"):
        recover_leftovers(directory.parent)
    skill, problems = read_skill_folder(directory)
    if skill is None or problems:
        raise SkillError(problems[0])
    return skill


def is_real_dir(path: Path) -> bool:
    """True for a folder that is not a symlink."""
    return path.is_dir() and not path.is_symlink()


def check_replaceable(directory: Path, scan: SkillScan, new: Skill | None) -> None:
    """Raise unless replacing (or, with `new=None`, removing) `directory` loses only files
    that are the old skill's own content (see the module doc)."""
    if scan.skill_md is None and scan.skill_problem is not None and scan.files:
        raise SkillError(f"{scan.skill_problem}; refusing to overwrite {shown(directory)}")
    if scan.problems:
        raise SkillError(f"{scan.problems[0]}; refusing to overwrite {shown(directory)}")
    skill_file = directory / SKILL_FILE
    if is_real_dir(skill_file):
        # The reader does not look inside it, so replacing it could delete unseen files.
        raise SkillError(
            f"{shown(skill_file)}: a folder where a file belongs; refusing to overwrite "
            f"{shown(directory)}"
        )
    if scan.hidden:
        raise SkillError(
            f"{shown(scan.hidden[0])}: hidden entry the save did not write; refusing to overwrite"
        )
    carried = new.resources if new is not None else {}
    for relative in sorted(scan.files):
        if relative.split("/")[0] not in RESOURCE_DIRS and relative not in carried:
            raise SkillError(
                f"{shown(directory / relative)}: a file the save would remove but did not "
                "write; refusing to overwrite (move it away or add it to the skill)"
            )


def save_skill(skill: Skill, directory: Path, writer: FileWriter) -> None:
    """`Skill.save` (see its doc)."""
    if directory.name != skill.name:
        raise SkillError(
            f"{shown(directory)}: folder name {shown(directory.name)!r} must equal "
            f"the skill name {skill.name!r}"
        )
    # Checks and recovery report one line; failures of the write itself stay `OSError`s.
    with reading(directory, "cannot save the skill"):
        if directory.parent.is_dir():
            recover_leftovers(directory.parent)
        exists = os.path.lexists(directory)
        if exists:
            if not is_real_dir(directory):
                raise SkillError(
                    f"{shown(directory)}: exists and is not a skill folder; refusing to overwrite"
                )
            scan = scan_skill_folder(directory)
            if scan.skill == skill and not scan.all_problems():
                return
            check_replaceable(directory, scan, skill)
            recover_leftovers(directory)
    if exists and not skill.resources and not scan.files:
        atomic_write(directory / SKILL_FILE, skill.to_markdown().encode("utf-8"), writer)
        return
    replace_dir(directory, lambda temporary: skill.write_files(temporary, writer))
