"""A training run's libraries as a pack (`grse skills export RUN PACK`, `grse train --export`).

Training leaves `RUN/libraries/iter_<t>/<agent>/<skill>/SKILL.md`; iteration t >= 1 is complete
once its gate record is in `RUN/gate.jsonl` (written after the libraries), iteration 0 is the
start. Everything is read through the run folder's boundary (the folder may come from anyone),
and each library is checked against the hash the gate recorded for it. The `grse-*`
bookkeeping (utility, provenance, iteration, parent hash) can be stripped so it does not ship
into production prompts. Skills the run's method state does not ship (`unpromoted_skills`) are
left out of the pack.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grse_graph.errors import SkillError
from grse_graph.skills import SkillLibrary, export_pack, is_agent_name, shown
from grse_graph.skills.boundary import Boundary, decode_utf8
from grse_graph.skills.library import read_library_folder
from grse_graph.skills.limits import MAX_MANIFEST_BYTES

from .run_folder import CONFIG_FILE, GATE_FILE, LIBRARIES_DIR, boundary_records, unpromoted_skills

_ITERATION = re.compile(r"^iter_(0|[1-9][0-9]{0,8})$")


def _committed(boundary: Boundary) -> dict[int, dict[str, Any]]:
    """iteration -> `libraries_after` (agent -> library hash) of every gate record."""
    records = boundary_records(
        boundary,
        GATE_FILE,
        "gate record",
        lambda r: isinstance(r["iteration"], int) and isinstance(r["libraries_after"], dict),
    )
    return {record["iteration"]: record["libraries_after"] for record in records}


def _library_limit(boundary: Boundary, run: Path) -> int | None:
    path = run / CONFIG_FILE
    if not boundary.exists(path):
        return None
    try:
        config = json.loads(decode_utf8(boundary.read(path, MAX_MANIFEST_BYTES, CONFIG_FILE), path))
    except (ValueError, RecursionError):
        raise SkillError(f"{shown(path)}: not valid JSON") from None
    limit = config.get("library_limit") if isinstance(config, dict) else None
    return limit if isinstance(limit, int) and limit >= 1 else None


def run_libraries(
    run_dir: Path | str, iteration: int | None = None
) -> tuple[int, dict[str, SkillLibrary]]:
    """The iteration chosen and its libraries by agent: `iteration`, or the latest committed
    one. One-line `SkillError` for anything missing, incomplete or not matching the gate."""
    run = Path(run_dir)
    boundary = Boundary(run, "run folder")
    root = run / LIBRARIES_DIR
    if not boundary.exists(root) or boundary.kind(root) != "folder":
        raise SkillError(f"{shown(root)}: missing (not a training run folder)")
    saved = sorted(
        int(match[1]) for p in boundary.list(root) if (match := _ITERATION.fullmatch(p.name))
    )
    committed = _committed(boundary)
    complete = [t for t in saved if t == 0 or t in committed]
    if iteration is None:
        if not complete:
            raise SkillError(f"{shown(root)}: no complete iteration to export")
        iteration = complete[-1]
    elif iteration not in saved:
        raise SkillError(
            f"{shown(root)}: no iteration {iteration} (saved: {', '.join(map(str, saved)) or '-'})"
        )
    elif iteration not in complete:
        raise SkillError(
            f"{shown(root / f'iter_{iteration}')}: iteration {iteration} has no gate record in "
            f"{GATE_FILE} (interrupted before its commit); its libraries may be incomplete"
        )
    folder = root / f"iter_{iteration}"
    if boundary.kind(folder) != "folder":
        raise SkillError(f"{shown(folder)}: must be a folder")
    limit = _library_limit(boundary, run)
    libraries: dict[str, SkillLibrary] = {}
    for agent_dir in boundary.list(folder):
        if agent_dir.name.startswith("."):
            continue
        if boundary.kind(agent_dir) != "folder" or not is_agent_name(agent_dir.name):
            raise SkillError(f"{shown(agent_dir)}: expected a library folder named after an agent")
        skills, problems = read_library_folder(agent_dir)
        if problems:
            raise SkillError(problems[0])
        library = SkillLibrary.build(agent_dir.name, skills, limit, source=shown(agent_dir))
        recorded = committed.get(iteration, {}).get(agent_dir.name)
        if recorded is not None and recorded != library.content_hash():
            raise SkillError(
                f"{shown(agent_dir)}: library hash {library.content_hash()[:12]} differs from "
                f"{GATE_FILE} ({str(recorded)[:12]}): edited after the run"
            )
        libraries[agent_dir.name] = library
    return iteration, libraries


def without_bookkeeping(libraries: Mapping[str, SkillLibrary]) -> dict[str, SkillLibrary]:
    """The libraries with the `grse-*` training metadata stripped from every skill, as they ship
    into production prompts (`--no-bookkeeping`)."""
    return {
        agent: SkillLibrary.build(
            agent, [s.without_bookkeeping() for s in library.skills], library.limit
        )
        for agent, library in libraries.items()
    }


def export_run_pack(
    run_dir: Path | str, iteration: int | None, dest: Path | str, bookkeeping: bool = True
) -> Path:
    """Write the libraries of a training run (`iteration`, or the latest committed one) as a
    pack at `dest`; with `bookkeeping=False` the `grse-*` metadata is stripped first.
    Skills the run's method state marks as unpromoted (shadow) are not shipped.
    Returns the pack path. Refuses a destination `export_pack` refuses."""
    chosen, libraries = run_libraries(run_dir, iteration)
    held = unpromoted_skills(run_dir, chosen)
    libraries = {
        agent: SkillLibrary.build(
            agent,
            [s for s in library.skills if s.name not in held.get(agent, set())],
            library.limit,
        )
        for agent, library in libraries.items()
    }
    return export_pack(libraries if bookkeeping else without_bookkeeping(libraries), dest)
