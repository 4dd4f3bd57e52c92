"""The libraries a new `grse train` run starts from: `--init-library AGENT=DIR` folders and
the agents of an `--init-pack` pack, as one agent: folder map checked against the team."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from grse_graph.cli.eval_cmd import library_folders
from grse_graph.errors import ConfigError
from grse_graph.skills import PACK_SKILLS_DIR, import_pack


def init_library_folders(values: list[str]) -> dict[str, str]:
    """`--init-library AGENT=DIR` options -> agent: absolute folder (checked, one per agent)."""
    return {
        agent: str(folder.resolve())
        for agent, folder in library_folders(values, "--init-library").items()
    }


def init_pack_folders(pack: Path) -> dict[str, str]:
    """`--init-pack PACK` -> agent: absolute folder of its skills in the pack (the pack is
    checked against its manifest first, so a pack edited after export is refused)."""
    libraries = import_pack(pack)
    return {agent: str((pack / agent / PACK_SKILLS_DIR).resolve()) for agent in libraries}


def starting_folders(
    libraries: dict[str, str], pack: Path | None, team_agents: Sequence[str]
) -> dict[str, str]:
    """The `--init-library` folders and the `--init-pack` agents' folders, as one agent:
    folder map; an agent given by both, or not in the team, is refused with one line."""
    from_pack = init_pack_folders(pack) if pack is not None else {}
    both = sorted(from_pack.keys() & libraries.keys())
    if both:
        raise ConfigError(
            f"--init-pack {pack}: agent {both[0]!r} is also given by --init-library; give one"
        )
    for agent, origin in [
        *((a, f"--init-library {a}=...") for a in libraries),
        *((a, f"--init-pack {pack}") for a in from_pack),
    ]:
        if agent not in team_agents:
            raise ConfigError(
                f"{origin}: agent {agent!r} is not in the team (agents: {', '.join(team_agents)})"
            )
    return {**libraries, **from_pack}
