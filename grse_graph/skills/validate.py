"""Checking any skill path: one skill folder, one library, a folder of libraries, or a pack."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from .library import read_library_folder
from .limits import MAX_FOLDER_ENTRIES, RESOURCE_DIRS, SKILL_FILE
from .manifest import MANIFEST_FILE
from .model import Skill
from .pack import read_pack, read_team_folder
from .storage import named_folder, read_skill_folder
from .text import one_line, shown

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


def _holds_skill(path: Path) -> bool:
    return os.path.lexists(path / SKILL_FILE)


def _kind(path: Path) -> PathKind:
    """What `path` looks like, from names only (nothing is opened or followed out of it)."""
    if not os.path.lexists(path):
        return "missing"
    if not os.path.isdir(path) or _holds_skill(path):
        return "skill"
    if os.path.lexists(path / MANIFEST_FILE):
        return "pack"
    try:
        children = [
            path / name
            for name in sorted(os.listdir(path))[:MAX_FOLDER_ENTRIES]
            if not name.startswith(".")
        ]
        if any(c.name in RESOURCE_DIRS for c in children):
            # Resource folders without a SKILL.md: a skill folder missing its main file.
            return "skill"
        if any(_holds_skill(c) for c in children):
            return "library"
        folders = [c for c in children if os.path.isdir(c) and not os.path.islink(c)]
        grandchildren_hold_skills = any(
            _holds_skill(c / name) for c in folders for name in os.listdir(c)[:MAX_FOLDER_ENTRIES]
        )
    except OSError:
        return "library"  # the library reader reports the unreadable entry in one line
    if children and len(folders) == len(children) and grandchildren_hold_skills:
        return "team"
    return "library"


def inspect_path(path: Path | str) -> PathReport:
    """Read whatever skill structure `path` holds, collecting all problems instead of raising."""
    path = Path(path)
    kind = _kind(path)
    groups: dict[str, list[Skill]] = {}
    problems: list[str]
    if kind == "missing":
        problems = [f"{shown(path)}: does not exist"]
    elif kind == "skill" and not os.path.isdir(path) and path.name != SKILL_FILE:
        problems = [f"{shown(path)}: not a folder (expected a skill, library, team or pack)"]
    elif kind == "skill":
        # `validate .` inside a skill folder: the folder's own name is the one to match.
        folder = named_folder(path if os.path.isdir(path) else path.parent)
        skill, problems = read_skill_folder(folder)
        if skill is not None and not problems:
            groups[folder.name] = [skill]
    elif kind == "library":
        skills, problems = read_library_folder(path)
        groups[path.name] = skills
    else:
        libraries, problems = read_pack(path) if kind == "pack" else read_team_folder(path)
        groups = {agent: list(library.skills) for agent, library in libraries.items()}
    safe = [shown(one_line(problem)) for problem in problems]
    return PathReport(path=shown(path), kind=kind, groups=groups, problems=safe)


def validate_path(path: Path | str) -> list[str]:
    """Every problem (one line each) of a skill folder, library folder, folder of library
    folders, or pack. An empty list means the path is valid."""
    return inspect_path(path).problems
