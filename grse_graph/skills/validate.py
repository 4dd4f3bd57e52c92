"""Checking any skill path: one skill folder, one library, a folder of libraries, or a pack."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .library import read_library_folder
from .limits import RESOURCE_DIRS, SKILL_FILE
from .model import Skill, read_skill_folder
from .pack import MANIFEST_FILE, read_pack, read_team_folder

PathKind = Literal["skill", "library", "team", "pack", "missing"]


class PathReport(BaseModel):
    """What a path holds: its kind, the valid skills per group (agent name, or the folder name
    for a lone library or skill), and every problem found."""

    model_config = ConfigDict(frozen=True)

    path: str
    kind: PathKind
    groups: dict[str, list[Skill]]
    problems: list[str]

    @property
    def skill_count(self) -> int:
        """Number of valid skills found."""
        return sum(len(skills) for skills in self.groups.values())


def _kind(path: Path) -> PathKind:
    if not path.exists():
        return "missing"
    if path.is_file() or (path / SKILL_FILE).exists():
        return "skill"
    if (path / MANIFEST_FILE).exists():
        return "pack"
    children = [c for c in path.iterdir() if not c.name.startswith(".")]
    if any(c.name in RESOURCE_DIRS for c in children):
        # Resource folders without a SKILL.md: a skill folder missing its main file.
        return "skill"
    if any((c / SKILL_FILE).exists() for c in children):
        return "library"
    grandchildren_hold_skills = any(
        (g / SKILL_FILE).exists() for c in children if c.is_dir() for g in c.iterdir()
    )
    if children and all(c.is_dir() for c in children) and grandchildren_hold_skills:
        return "team"
    return "library"


def inspect_path(path: Path | str) -> PathReport:
    """Read whatever skill structure `path` holds, collecting all problems instead of raising."""
    path = Path(path)
    kind = _kind(path)
    groups: dict[str, list[Skill]] = {}
    problems: list[str]
    if kind == "missing":
        problems = [f"{path}: does not exist"]
    elif kind == "skill":
        folder = path.parent if path.is_file() else path
        skill, problems = read_skill_folder(folder)
        if skill is not None and not problems:
            groups[folder.name] = [skill]
    elif kind == "library":
        skills, problems = read_library_folder(path)
        groups[path.name] = skills
    else:
        libraries, problems = read_pack(path) if kind == "pack" else read_team_folder(path)
        groups = {agent: list(library.skills) for agent, library in libraries.items()}
    return PathReport(path=str(path), kind=kind, groups=groups, problems=problems)


def validate_path(path: Path | str) -> list[str]:
    """Every problem (one line each) of a skill folder, library folder, folder of library
    folders, or pack. An empty list means the path is valid."""
    return inspect_path(path).problems
