"""Skill packs: several agents' libraries in one folder with a manifest, ready to ship.

Layout: `<pack>/manifest.json` and `<pack>/<agent>/skills/<skill>/SKILL.md` (+ resources).
One agent's part is what deepagents expects:
`create_deep_agent(model, backend=FilesystemBackend(root_dir=<pack>/<agent>, virtual_mode=True),
skills=["/skills/"])`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from grse_graph.errors import SkillError

from .boundary import Boundary, one_reason, reading
from .files import FileWriter, durable_write, replace_dir
from .library import SkillLibrary, read_library_folder
from .limits import MAX_RESOURCE_BYTES, MAX_RESOURCE_DEPTH, is_agent_name
from .manifest import MANIFEST_FILE, PackAgentEntry, PackManifest, read_manifest
from .model import Skill, validation_message
from .storage import scan_skill_folder
from .text import shown

PACK_SKILLS_DIR = "skills"


def check_pack_destination(dest: Path) -> None:
    """Raise unless `dest` is absent, an empty folder, or a pack that reads back exactly as
    its manifest says (so replacing it loses nothing this package did not write)."""
    with reading(dest, "cannot check the destination"):
        if not os.path.lexists(dest):
            return
        if os.path.islink(dest) or not os.path.isdir(dest):
            raise SkillError(
                f"{shown(dest)}: exists and is not a folder; refusing to overwrite it with a pack"
            )
        if not os.listdir(dest):
            return
        if not os.path.lexists(dest / MANIFEST_FILE):
            raise SkillError(
                f"{shown(dest)}: exists and is not a skill pack; refusing to overwrite"
            )
    _, problems = read_pack(dest)
    if problems:
        raise SkillError(
            f"{shown(dest)}: exists and is not a skill pack as this package wrote it "
            f"({problems[0]}); refusing to overwrite"
        )


def export_pack(
    libraries: Mapping[str, SkillLibrary], dest: Path | str, *, writer: FileWriter = durable_write
) -> Path:
    """Write the libraries as a pack at `dest` and return it.

    `dest` must be absent, an empty folder, or an earlier pack that still matches its manifest
    (anything else is refused with one line). The pack is built beside `dest` and swapped in,
    so a crash leaves any earlier pack intact.
    """
    dest = Path(dest)
    for agent, library in libraries.items():
        if library.agent != agent:
            raise SkillError(
                f"pack: library of agent {library.agent!r} is filed under {shown(agent)[:80]!r}"
            )
    try:
        manifest = PackManifest.describe(libraries)
    except ValidationError as error:
        raise SkillError(validation_message(error, "pack manifest")) from None
    check_pack_destination(dest)

    def build(temporary: Path) -> None:
        for agent, library in sorted(libraries.items()):
            root = temporary / agent / PACK_SKILLS_DIR
            root.mkdir(parents=True)
            for skill in library.skills:
                folder = root / skill.name
                folder.mkdir()
                skill.write_files(folder, writer)
        writer(temporary / MANIFEST_FILE, manifest.to_bytes())

    try:
        replace_dir(dest, build)
    except OSError as error:
        raise SkillError(f"{shown(dest)}: cannot write the pack: {one_reason(error)}") from None
    return dest


def _agent_files(
    boundary: Boundary, folder: Path, entry: PackAgentEntry, problems: list[str]
) -> None:
    """Check the files of an agent's folder besides `skills/` against the manifest."""
    seen: set[str] = set()

    def walk(current: Path, depth: int) -> None:
        for child in boundary.list(current):
            relative = child.relative_to(folder).as_posix()
            if depth == 0 and child.name == PACK_SKILLS_DIR:
                continue
            try:
                kind = boundary.kind(child)
                if kind == "folder" and depth < MAX_RESOURCE_DEPTH:
                    walk(child, depth + 1)
                    continue
                if relative not in entry.files:
                    raise SkillError(
                        f"{shown(child)}: not listed in {MANIFEST_FILE} (an agent's folder is "
                        "its filesystem root)"
                    )
                data = boundary.read(child, MAX_RESOURCE_BYTES, "extra file")
                if hashlib.sha256(data).hexdigest() != entry.files[relative]:
                    raise SkillError(
                        f"{shown(child)}: hash differs from {MANIFEST_FILE}: edited after export"
                    )
                seen.add(relative)
            except SkillError as error:
                problems.append(str(error))

    try:
        walk(folder, 0)
    except SkillError as error:
        problems.append(str(error))
    for missing in sorted(set(entry.files) - seen):
        if not any(missing in line for line in problems):
            problems.append(f"{shown(folder / missing)}: listed in {MANIFEST_FILE} but missing")


def _pack_library(
    boundary: Boundary, pack: Path, entry: PackAgentEntry, problems: list[str]
) -> SkillLibrary | None:
    folder = pack / entry.agent
    skills_dir = folder / PACK_SKILLS_DIR
    try:
        if boundary.kind(folder) != "folder":
            raise SkillError(f"{shown(folder)}: must be a folder")
        _agent_files(boundary, folder, entry, problems)
        if boundary.kind(skills_dir) != "folder":
            raise SkillError(f"{shown(skills_dir)}: must be a folder")
        children = boundary.list(skills_dir)
    except SkillError as error:
        problems.append(str(error))
        return None
    expected = {s.name: s.content_hash for s in entry.skills}
    skills: list[Skill] = []
    found = len(problems)
    for child in children:
        if child.name not in expected:
            problems.append(f"{shown(child)}: not listed in {MANIFEST_FILE}")
            continue
        try:
            if boundary.kind(child) != "folder":
                raise SkillError(f"{shown(child)}: must be a skill folder")
        except SkillError as error:
            problems.append(str(error))
            continue
        scan = scan_skill_folder(child)
        problems.extend(scan.all_problems())
        problems.extend(f"{shown(h)}: not listed in {MANIFEST_FILE}" for h in scan.hidden)
        if scan.skill is None:
            continue
        actual = scan.skill.content_hash()
        if actual != expected[child.name]:
            problems.append(
                f"{shown(child)}: content hash {actual[:12]} differs from "
                f"{MANIFEST_FILE} ({expected[child.name][:12]}): edited after export"
            )
        skills.append(scan.skill)
    present = {child.name for child in children}
    for name in sorted(set(expected) - present):
        problems.append(f"{shown(skills_dir)}: skill {name!r} is in {MANIFEST_FILE} but missing")
    if len(problems) > found:
        return None
    try:
        library = SkillLibrary.build(entry.agent, skills, entry.limit, source=shown(skills_dir))
    except SkillError as error:
        problems.append(str(error))
        return None
    if library.content_hash() != entry.library_hash:
        problems.append(
            f"{shown(pack / MANIFEST_FILE)}: library_hash of {entry.agent!r} "
            f"({entry.library_hash[:12]}) differs from its skills ({library.content_hash()[:12]})"
        )
        return None
    return library


def read_pack(path: Path) -> tuple[dict[str, SkillLibrary], list[str]]:
    """Every library of the pack at `path` and every problem found (one line each): the
    manifest's schema and hashes (skills and `library_hash`), unlisted entries anywhere an
    agent can see them, and everything the skill readers check."""
    try:
        boundary = Boundary(path, "pack")
        manifest = read_manifest(path, boundary)
        entries = boundary.list(path)
    except SkillError as error:
        return {}, [str(error)]
    problems: list[str] = []
    listed = {entry.agent for entry in manifest.agents}
    for child in entries:
        if child.name != MANIFEST_FILE and child.name not in listed:
            problems.append(f"{shown(child)}: not listed in {MANIFEST_FILE}")
    libraries: dict[str, SkillLibrary] = {}
    for entry in manifest.agents:
        library = _pack_library(boundary, path, entry, problems)
        if library is not None:
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
    try:
        boundary = Boundary(path, "team folder")
        entries = boundary.list(path)
    except SkillError as error:
        if not os.path.isdir(path):
            return {}, [f"{shown(path)}: does not exist or is not a folder"]
        return {}, [str(error)]
    libraries: dict[str, SkillLibrary] = {}
    problems: list[str] = []
    for child in entries:
        if child.name.startswith("."):
            continue
        try:
            if boundary.kind(child) != "folder" or not is_agent_name(child.name):
                raise SkillError(f"{shown(child)}: expected a library folder named after an agent")
        except SkillError as error:
            problems.append(str(error))
            continue
        skills, library_problems = read_library_folder(child)
        problems.extend(library_problems)
        if not library_problems:
            libraries[child.name] = SkillLibrary.build(child.name, skills, source=shown(child))
    return libraries, problems


def load_libraries(path: Path | str) -> dict[str, SkillLibrary]:
    """Libraries by agent from a pack (with `manifest.json`) or a folder of library folders
    (`<path>/<agent>/<skill>/SKILL.md`, as in `skills/examples/hotpotqa`)."""
    path = Path(path)
    if os.path.lexists(path / MANIFEST_FILE):
        return import_pack(path)
    libraries, problems = read_team_folder(path)
    if problems:
        raise SkillError(problems[0])
    return libraries
