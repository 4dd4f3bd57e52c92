"""`SkillLibrary`: one agent's skills, in memory and as a folder of skill folders on disk."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from grse_graph.errors import SkillError

from .diff import library_diff
from .files import FileWriter, check_inside, durable_write, is_save_leftover, replace_dir
from .limits import AGENT_PATTERN, SKILL_FILE
from .model import Skill, read_skill_folder, validation_lines


class SkillLibrary(BaseModel):
    """One agent's skill library: skills sorted by name, unique names, at most `limit` skills.

    Immutable: every operation returns a new library. Errors a caller can act on (duplicate,
    unknown name, over the limit) are `SkillError`s with one line naming the library.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    agent: str = Field(pattern=AGENT_PATTERN.pattern)
    skills: list[Skill] = []
    limit: int | None = Field(default=None, ge=1)

    @field_validator("skills")
    @classmethod
    def _sorted_unique(cls, value: list[Skill]) -> list[Skill]:
        ordered = sorted(value, key=lambda skill: skill.name)
        for first, second in itertools.pairwise(ordered):
            if first.name == second.name:
                raise ValueError(f"duplicate skill name {first.name!r}")
        return ordered

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
            raise SkillError(validation_lines(error, source or f"library {agent!r}")[0]) from None

    @classmethod
    def empty(cls, agent: str, limit: int | None = None) -> SkillLibrary:
        """A library with no skills."""
        return cls.build(agent, [], limit)

    @classmethod
    def load(cls, path: Path | str, *, agent: str, limit: int | None = None) -> SkillLibrary:
        """Read a folder of skill folders (an empty folder is an empty library)."""
        skills, problems = read_library_folder(Path(path))
        if problems:
            raise SkillError(problems[0])
        return cls.build(agent, skills, limit, source=str(path))

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

    def diff(self, other: SkillLibrary) -> str:
        """A readable diff from this library to `other`: a summary, then per-skill unified
        diffs of SKILL.md and resources for every added, removed and changed skill."""
        return library_diff(
            {s.name: s for s in self.skills},
            {s.name: s for s in other.skills},
            f"library {self.agent}",
            f"library {other.agent}",
        )

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

    def with_limit(self, limit: int | None) -> SkillLibrary:
        """The same skills under another limit (`SkillError` when they do not fit)."""
        return type(self).build(self.agent, self.skills, limit)

    # ----- disk --------------------------------------------------------------------------

    def save(self, path: Path | str, *, writer: FileWriter = durable_write) -> None:
        """Write the library as a folder of skill folders, atomically.

        The new folder is built as a hidden sibling and swapped in, so a crash leaves the old
        library intact. Skills no longer in the library disappear from disk; unchanged skills
        keep their exact bytes; an unchanged library is not written at all. Refuses to replace a
        folder holding anything other than skill folders.
        """
        path = Path(path)
        previous, clean = _existing_skills(path)
        if clean and previous == {s.name: s for s in self.skills}:
            return

        def build(temporary: Path) -> None:
            for skill in self.skills:
                folder = temporary / skill.name
                folder.mkdir()
                if previous.get(skill.name) == skill:
                    # Keep hand-written formatting of unchanged skills byte for byte.
                    writer(folder / SKILL_FILE, (path / skill.name / SKILL_FILE).read_bytes())
                    for rel, data in sorted(skill.resources.items()):
                        writer(folder / rel, data)
                else:
                    skill.write_files(folder, writer)

        replace_dir(path, build)


def read_library_folder(path: Path) -> tuple[list[Skill], list[str]]:
    """Read every skill folder under `path`, collecting all problems (one line each).

    Hidden entries (editor files, leftovers of an interrupted save) are skipped.
    """
    if not path.is_dir():
        return [], [f"{path}: library folder does not exist or is not a folder"]
    skills: list[Skill] = []
    problems: list[str] = []
    for entry in sorted(path.iterdir()):
        if entry.name.startswith("."):
            continue
        try:
            if entry.is_symlink():
                check_inside(entry, path, "library folder")
            if not entry.is_dir():
                raise SkillError(f"{entry}: unexpected file (a library holds only skill folders)")
        except SkillError as error:
            problems.append(str(error))
            continue
        skill, skill_problems = read_skill_folder(entry)
        problems.extend(skill_problems)
        if skill is not None and not skill_problems:
            skills.append(skill)
    return skills, problems


def _existing_skills(path: Path) -> tuple[dict[str, Skill], bool]:
    """The valid skills currently at `path`, and whether the folder exists and holds nothing
    else. Raises when the folder holds content that is not ours to delete."""
    if not path.exists() and not path.is_symlink():
        return {}, False
    if not path.is_dir() or path.is_symlink():
        raise SkillError(f"{path}: exists and is not a library folder; refusing to overwrite")
    skills: dict[str, Skill] = {}
    clean = True
    for entry in path.iterdir():
        if is_save_leftover(entry.name):
            clean = False
            continue
        if not entry.is_dir() or entry.is_symlink() or not (entry / SKILL_FILE).is_file():
            raise SkillError(
                f"{entry}: not a skill folder; refusing to replace the library folder {path}"
            )
        skill, problems = read_skill_folder(entry)
        if skill is not None and not problems:
            skills[skill.name] = skill
        else:
            clean = False
    return skills, clean
