"""`export_pack(source, dest)`: ship a team's libraries as a pack, from a training result, a run
folder or libraries in hand, with the same filter `grse skills export` applies to a run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeAlias

from grse_graph.errors import ConfigError
from grse_graph.skills import MANIFEST_FILE, SkillLibrary, shown
from grse_graph.skills import export_pack as write_pack
from grse_graph.training.run_export import export_run_pack, without_bookkeeping
from grse_graph.training.run_folder import LIBRARIES_DIR
from grse_graph.training.runner import TrainResult

from .inputs import PathInput

PackSource: TypeAlias = TrainResult | Mapping[str, SkillLibrary] | PathInput
"""What `export_pack` ships: a `TrainResult`, a training run folder, or libraries by agent."""


def export_pack(
    source: PackSource,
    dest: PathInput,
    *,
    iteration: int | None = None,
    bookkeeping: bool = True,
) -> Path:
    """Write a team's libraries as a pack at `dest` (`<agent>/skills/<skill>/SKILL.md` plus
    `manifest.json`) and return its path.

    `source` is one of:

    - a `TrainResult` (what `train` returns): the libraries the run ended with, or those of
      `iteration`;
    - a training run folder: its latest committed iteration's libraries, or `iteration`'s;
    - libraries by agent (`SkillLibrary` values), shipped as they are.

    A run's skills that its method holds back (a SkillMAS shadow or disabled skill) stay out of
    the pack, exactly as `grse skills export` leaves them out. `bookkeeping=False` strips the
    `grse-*` training metadata from every skill. `dest` must be absent, an empty folder or an
    earlier pack. Anything unusable is one line: a `ConfigError` for a source that is none of
    the three or a folder that is not a run, a `SkillError` for a broken run or destination.
    """
    if isinstance(source, TrainResult):
        # Pinned to the iteration the result ended at, so a later resume of the same run
        # folder does not change what this result ships.
        # (0: no iteration was gated).
        final = max((gate.iteration for gate in source.gates), default=0)
        chosen = final if iteration is None else iteration
        return export_run_pack(_run_folder(source.run_dir), chosen, dest, bookkeeping)
    if isinstance(source, str | Path):
        return export_run_pack(_run_folder(source), iteration, dest, bookkeeping)
    if isinstance(source, Mapping):
        if iteration is not None:
            raise ConfigError("export_pack: iteration only goes with a TrainResult or run folder")
        libraries = _libraries(source)
        return write_pack(libraries if bookkeeping else without_bookkeeping(libraries), dest)
    raise ConfigError(
        "export_pack: expected a TrainResult, a training run folder or libraries by agent, "
        f"not {type(source).__name__}"
    )


def _run_folder(path: PathInput) -> Path:
    """`path` if it looks like a training run folder; a one-line `ConfigError` otherwise (the
    run's own contents are checked, through its boundary, by `export_run_pack`)."""
    folder = Path(path)
    if not folder.is_dir():
        raise ConfigError(f"export_pack: {shown(folder)} is not a folder (expected a run folder)")
    if not os.path.lexists(folder / LIBRARIES_DIR):
        # A pack is the likeliest wrong folder here: it is what this function writes.
        kind = "a skill pack" if os.path.lexists(folder / MANIFEST_FILE) else "no libraries/"
        raise ConfigError(
            f"export_pack: {shown(folder)} is not a training run folder ({kind}; a run folder "
            f"holds {LIBRARIES_DIR}/iter_<t>/<agent>)"
        )
    return folder


def _libraries(source: Mapping[Any, Any]) -> dict[str, SkillLibrary]:
    """The mapping as libraries by agent; any other value is a one-line `ConfigError`."""
    libraries: dict[str, SkillLibrary] = {}
    for agent, library in source.items():
        if not isinstance(agent, str) or not isinstance(library, SkillLibrary):
            raise ConfigError(
                f"export_pack: libraries map agent names to SkillLibrary objects, not "
                f"{type(agent).__name__} -> {type(library).__name__}"
            )
        libraries[agent] = library
    return libraries
