"""`SkillLibrary`: one agent's skills, in memory and as a folder of skill folders on disk."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from grse_graph.errors import SkillError

from .boundary import Boundary, reading
from .files import FileWriter, durable_write, recover_leftovers, replace_dir
from .limits import AGENT_PATTERN, MAX_NAME_CHARS, SKILL_FILE
from .model import Skill, validation_message
from .storage import SkillScan, check_replaceable, is_real_dir, read_skill_folder, scan_skill_folder
from .text import first_repeat, shown


class SkillLibrary(BaseModel):
    """One agent's skill library: skills sorted by name, unique names, at most `limit` skills.

    Immutable: every operation returns a new library. Errors a caller can act on (duplicate,
    unknown name, over the limit) are `SkillError`s with one line naming the library.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str = Field(pattern=AGENT_PATTERN.pattern, max_length=MAX_NAME_CHARS)
    skills: list[Skill] = []
    limit: int | None = Field(default=None, ge=1)

    @field_validator("skills")
    @classmethod
    def _sorted_unique(cls, value: list[Skill]) -> list[Skill]:
        if (twice := first_repeat(skill.name for skill in value)) is not None:
            raise ValueError(f"duplicate skill name {twice!r}")
        return sorted(value, key=lambda skill: skill.name)

    @model_validator(mode="after")
    def _within_limit(self) -> SkillLibrary:
        if self.limit is not None and len(self.skills) > self.limit:
            raise ValueError(f"{len(self.skills)} skills, over the library limit of {self.limit}")
        return self

    # ----- construction ------------------------------------------------------------------

    @classmethod
    def build(
        cls, agent: str, skills: Iterable[Skill], limit: int | None = None, source: str = ""
    ) -> SkillLibrary:
        """Construct a library, turning validation failures into a one-line `SkillError`."""
        try:
            return cls(agent=agent, skills=list(skills), limit=limit)
        except ValidationError as error:
            raise SkillError(
                validation_message(error, source or f"library {agent[:80]!r}")
            ) from None

    @classmethod
    def empty(cls, agent: str, limit: int | None = None) -> SkillLibrary:
        """A library with no skills."""
        return cls.build(agent, [], limit)

    @classmethod
    def load(cls, path: Path | str, *, agent: str, limit: int | None = None) -> SkillLibrary:
        """Read a folder of skill folders (an empty folder is an empty library), after
        recovering leftovers of an interrupted save."""
        path = Path(path)
        with reading(path.parent, "cannot recover an interrupted save"):
            recover_leftovers(path.parent)
            if is_real_dir(path):
                recover_leftovers(path)
        skills, problems = read_library_folder(path)
        if problems:
            raise SkillError(problems[0])
        return cls.build(agent, skills, limit, source=shown(path))

    # ----- queries -----------------------------------------------------------------------

    def __hash__(self) -> int:
        return hash((self.agent, self.limit, tuple(self.skills)))

    def __len__(self) -> int:
        return len(self.skills)

    def names(self) -> list[str]:
        """Skill names in library order (sorted)."""
        return [skill.name for skill in self.skills]

    def has(self, name: str) -> bool:
        """True when the library holds a skill of this name."""
        return any(skill.name == name for skill in self.skills)

    def get(self, name: str) -> Skill:
        """The skill of this name, or a `SkillError`."""
        for skill in self.skills:
            if skill.name == name:
                return skill
        raise SkillError(f"library {self.agent!r}: no skill named {name!r}")

    def content_hash(self) -> str:
        """sha256 over the skills' names and content hashes (agent and limit excluded)."""
        lines = "".join(f"{skill.name}\0{skill.content_hash()}\n" for skill in self.skills)
        return hashlib.sha256(lines.encode("utf-8")).hexdigest()

    # ----- operations (each returns a new library) ---------------------------------------

    def _with(self, skills: list[Skill]) -> SkillLibrary:
        return type(self).build(self.agent, skills, self.limit)

    def add(self, skill: Skill) -> SkillLibrary:
        """Add a new skill; `SkillError` when the name exists or the limit would be exceeded."""
        if self.has(skill.name):
            raise SkillError(f"library {self.agent!r}: a skill named {skill.name!r} already exists")
        if self.limit is not None and len(self.skills) >= self.limit:
            raise SkillError(
                f"library {self.agent!r}: cannot add {skill.name!r}, the library is at its limit "
                f"of {self.limit} skills"
            )
        return self._with([*self.skills, skill])

    def replace(self, skill: Skill) -> SkillLibrary:
        """Replace the skill of the same name; `SkillError` when there is none."""
        self.get(skill.name)
        return self._with([skill if s.name == skill.name else s for s in self.skills])

    def remove(self, name: str) -> SkillLibrary:
        """Remove a skill by name; `SkillError` when there is none."""
        self.get(name)
        return self._with([s for s in self.skills if s.name != name])

    def merge(self, names: Sequence[str], merged: Skill) -> SkillLibrary:
        """Replace the named skills (at least two, all present) by one merged skill.

        The merged skill may reuse one of the removed names but no other existing name.
        """
        unique = list(dict.fromkeys(names))
        if len(unique) < 2:
            raise SkillError(f"library {self.agent!r}: merge needs at least two distinct skills")
        for name in unique:
            self.get(name)
        remaining = [s for s in self.skills if s.name not in unique]
        if any(s.name == merged.name for s in remaining):
            raise SkillError(
                f"library {self.agent!r}: merged skill name {merged.name!r} is already taken"
            )
        return self._with([*remaining, merged])

    # ----- disk --------------------------------------------------------------------------

    def save(self, path: Path | str, *, writer: FileWriter = durable_write) -> None:
        """Write the library as a folder of skill folders, atomically.

        The new folder is built as a hidden sibling and swapped in, so a crash leaves the old
        library intact (or recoverable by the next load or save). Skills no longer in the
        library disappear from disk; unchanged skills keep their exact bytes; an unchanged
        library is not written at all. Refuses, with one line, to replace a folder holding
        anything a save did not write: files or hidden entries beside the skill folders, or
        inside a skill folder a file outside references/, scripts/, assets/ that the new
        library does not carry (see `storage`).
        """
        path = Path(path)
        previous = _previous_skills(path, {s.name: s for s in self.skills})
        unchanged = {name: scan.skill for name, scan in previous.items()} == {
            s.name: s for s in self.skills
        }
        if unchanged and is_real_dir(path):
            return

        def build(temporary: Path) -> None:
            for skill in self.skills:
                folder = temporary / skill.name
                folder.mkdir()
                old = previous.get(skill.name)
                if old is not None and old.skill == skill and old.skill_md is not None:
                    # Keep hand-written formatting of unchanged skills byte for byte.
                    writer(folder / SKILL_FILE, old.skill_md)
                    skill.write_resources(folder, writer)
                else:
                    skill.write_files(folder, writer)

        replace_dir(path, build)


def read_library_folder(path: Path) -> tuple[list[Skill], list[str]]:
    """Read every skill folder under `path`, collecting all problems (one line each).

    Hidden entries (editor files, leftovers of an interrupted save) are skipped; a skill
    folder may be a symlink only to a folder inside the library.
    """
    try:
        boundary = Boundary(path, "library folder")
        entries = boundary.list(path)
    except SkillError as error:
        if not os.path.isdir(path):
            return [], [f"{shown(path)}: library folder does not exist or is not a folder"]
        return [], [str(error)]
    skills: list[Skill] = []
    problems: list[str] = []
    for entry in entries:
        if entry.name.startswith("."):
            continue
        try:
            if boundary.kind(entry) != "folder":
                raise SkillError(
                    f"{shown(entry)}: unexpected file (a library holds only skill folders)"
                )
        except SkillError as error:
            problems.append(str(error))
            continue
        skill, skill_problems = read_skill_folder(entry)
        problems.extend(skill_problems)
        if skill is not None and not skill_problems:
            skills.append(skill)
    return skills, problems


def _previous_skills(path: Path, new: dict[str, Skill]) -> dict[str, SkillScan]:
    """What a save would replace at `path`, by skill name; raises when that would lose a file
    the save did not write."""
    with reading(path, "cannot save the library"):
        if path.parent.is_dir():
            recover_leftovers(path.parent)
        if not os.path.lexists(path):
            return {}
        if not is_real_dir(path):
            raise SkillError(
                f"{shown(path)}: exists and is not a library folder; refusing to overwrite"
            )
        recover_leftovers(path)
        previous: dict[str, SkillScan] = {}
        for entry in Boundary(path, "library folder").list(path):
            if entry.name.startswith("."):
                raise SkillError(
                    f"{shown(entry)}: hidden entry the save did not write; refusing to replace "
                    f"the library folder {shown(path)}"
                )
            if not is_real_dir(entry) or not os.path.lexists(entry / SKILL_FILE):
                raise SkillError(
                    f"{shown(entry)}: not a skill folder; refusing to replace the library "
                    f"folder {shown(path)}"
                )
            scan = scan_skill_folder(entry)
            check_replaceable(entry, scan, new.get(entry.name))
            previous[entry.name] = scan
        return previous
