"""Skill packs: several agents' libraries in one folder with a manifest, ready to ship.

Layout: `<pack>/manifest.json` and `<pack>/<agent>/skills/<skill>/SKILL.md` (+ resources).
One agent's part is what deepagents expects:
`create_deep_agent(model, backend=FilesystemBackend(root_dir=<pack>/<agent>, virtual_mode=True),
skills=["/skills/"])`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

import grse_graph
from grse_graph.errors import SkillError

from .files import FileWriter, durable_write, replace_dir
from .library import SkillLibrary, read_library_folder
from .limits import AGENT_PATTERN
from .text import one_line

MANIFEST_FILE = "manifest.json"
PACK_SKILLS_DIR = "skills"


class PackSkillEntry(BaseModel):
    """One skill of a packed library and its content hash."""

    model_config = ConfigDict(extra="forbid")

    name: str
    content_hash: str


class PackAgentEntry(BaseModel):
    """One agent's library in a pack."""

    model_config = ConfigDict(extra="forbid")

    agent: str
    limit: int | None = None
    library_hash: str
    skills: list[PackSkillEntry]


class PackManifest(BaseModel):
    """`manifest.json` of a skill pack."""

    model_config = ConfigDict(extra="forbid")

    format: Literal["grse-skill-pack"] = "grse-skill-pack"
    format_version: Literal[1] = 1
    grse_graph_version: str
    agents: list[PackAgentEntry]

    @classmethod
    def describe(cls, libraries: Mapping[str, SkillLibrary]) -> PackManifest:
        """The manifest for these libraries (agents in sorted order)."""
        return cls(
            grse_graph_version=grse_graph.__version__,
            agents=[
                PackAgentEntry(
                    agent=agent,
                    limit=library.limit,
                    library_hash=library.content_hash(),
                    skills=[
                        PackSkillEntry(name=s.name, content_hash=s.content_hash())
                        for s in library.skills
                    ],
                )
                for agent, library in sorted(libraries.items())
            ],
        )


def export_pack(
    libraries: Mapping[str, SkillLibrary], dest: Path | str, *, writer: FileWriter = durable_write
) -> Path:
    """Write the libraries as a pack at `dest` (replacing an earlier pack there) and return it.

    The pack is built beside `dest` and swapped in, so a crash leaves any earlier pack intact.
    Refuses to replace a non-empty folder that is not a pack.
    """
    dest = Path(dest)
    for agent, library in libraries.items():
        if library.agent != agent:
            raise SkillError(f"pack: library of agent {library.agent!r} is filed under {agent!r}")
    if dest.exists():
        is_pack = (dest / MANIFEST_FILE).is_file()
        if not dest.is_dir() or (not is_pack and any(dest.iterdir())):
            raise SkillError(f"{dest}: exists and is not a skill pack; refusing to overwrite")
    manifest = PackManifest.describe(libraries)

    def build(temporary: Path) -> None:
        for agent, library in sorted(libraries.items()):
            root = temporary / agent / PACK_SKILLS_DIR
            root.mkdir(parents=True)
            for skill in library.skills:
                folder = root / skill.name
                folder.mkdir()
                skill.write_files(folder, writer)
        writer(temporary / MANIFEST_FILE, (manifest.model_dump_json(indent=2) + "\n").encode())

    replace_dir(dest, build)
    return dest


def read_manifest(path: Path) -> PackManifest:
    """The validated manifest of the pack at `path`."""
    manifest_path = path / MANIFEST_FILE
    try:
        return PackManifest.model_validate_json(manifest_path.read_bytes())
    except FileNotFoundError:
        raise SkillError(f"{manifest_path}: missing (not a skill pack)") from None
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise SkillError(f"{manifest_path}: {where}: {one_line(str(first['msg']))}") from None


def read_pack(path: Path) -> tuple[dict[str, SkillLibrary], list[str]]:
    """Every library of the pack at `path` and every problem found (one line each)."""
    try:
        manifest = read_manifest(path)
    except SkillError as error:
        return {}, [str(error)]
    problems: list[str] = []
    libraries: dict[str, SkillLibrary] = {}
    listed = {entry.agent for entry in manifest.agents}
    for child in sorted(path.iterdir()):
        if (
            child.name != MANIFEST_FILE
            and not child.name.startswith(".")
            and child.name not in listed
        ):
            problems.append(f"{child}: not listed in {MANIFEST_FILE}")
    for entry in manifest.agents:
        if not AGENT_PATTERN.fullmatch(entry.agent):
            problems.append(f"{path / MANIFEST_FILE}: invalid agent name {entry.agent!r}")
            continue
        folder = path / entry.agent / PACK_SKILLS_DIR
        skills, library_problems = read_library_folder(folder)
        problems.extend(library_problems)
        if library_problems:
            continue
        try:
            library = SkillLibrary.build(entry.agent, skills, entry.limit, source=str(folder))
        except SkillError as error:
            problems.append(str(error))
            continue
        expected = {s.name: s.content_hash for s in entry.skills}
        actual = {s.name: s.content_hash() for s in library.skills}
        for name in sorted(set(expected) | set(actual)):
            if name not in actual:
                problems.append(f"{folder}: skill {name!r} is in {MANIFEST_FILE} but missing")
            elif name not in expected:
                problems.append(f"{folder / name}: not listed in {MANIFEST_FILE}")
            elif expected[name] != actual[name]:
                problems.append(
                    f"{folder / name}: content hash {actual[name][:12]} differs from "
                    f"{MANIFEST_FILE} ({expected[name][:12]}): edited after export"
                )
        libraries[entry.agent] = library
    return libraries, problems


def import_pack(path: Path | str) -> dict[str, SkillLibrary]:
    """Read a pack written by `export_pack`, checking it against its manifest."""
    libraries, problems = read_pack(Path(path))
    if problems:
        raise SkillError(problems[0])
    return libraries


def read_team_folder(path: Path) -> tuple[dict[str, SkillLibrary], list[str]]:
    """Libraries of a folder of library folders (`<path>/<agent>/<skill>/SKILL.md`)."""
    if not path.is_dir():
        return {}, [f"{path}: does not exist or is not a folder"]
    libraries: dict[str, SkillLibrary] = {}
    problems: list[str] = []
    for child in sorted(path.iterdir()):
        if child.name.startswith("."):
            continue
        if not child.is_dir() or not AGENT_PATTERN.fullmatch(child.name):
            problems.append(f"{child}: expected a library folder named after an agent")
            continue
        skills, library_problems = read_library_folder(child)
        problems.extend(library_problems)
        if not library_problems:
            libraries[child.name] = SkillLibrary.build(child.name, skills, source=str(child))
    return libraries, problems


def load_libraries(path: Path | str) -> dict[str, SkillLibrary]:
    """Libraries by agent from a pack (with `manifest.json`) or a folder of library folders
    (`<path>/<agent>/<skill>/SKILL.md`, as in `skills/examples/hotpotqa`)."""
    path = Path(path)
    if (path / MANIFEST_FILE).exists():
        return import_pack(path)
    libraries, problems = read_team_folder(path)
    if problems:
        raise SkillError(problems[0])
    return libraries
