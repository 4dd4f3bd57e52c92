"""Planted starting libraries: a skill pack plus which of its skills help and which harm.

The GRSE repair study (paper §5.3, Tables 4-5) starts training from a library that mixes
good advice with plausible-sounding bad advice and asks whether training finds and prunes
the bad skills. The skills themselves must not say which is which (the critic and the
optimizer read their names, descriptions and bodies), so the kinds live in a separate file
that only reports read.

Format: a JSON file (any task may ship one; the demo task's is `demo_data/planted.json`)::

    {
      "task": "demo",
      "pack": "planted",
      "about": "where the library comes from (optional; printed above the report)",
      "skills": [
        {"agent": "retriever", "skill": "yes-no-candidate", "kind": "helpful",
         "note": "why this skill helps or harms, for the report",
         "paper_name": "the paper's label (optional)", "paper_lines": [245]},
        ...
      ]
    }

- `task`: the task the library is planted for (as `grse ... --task` names it).
- `pack`: the starting libraries, a path relative to this JSON file: a skill pack
  (`<pack>/manifest.json`, `<pack>/<agent>/skills/<skill>/SKILL.md`) that can be passed to
  `--pack` as it is, or a folder of library folders; read by
  `grse_graph.skills.load_libraries`.
- `skills`: every skill of the pack exactly once, with its `kind` (`helpful`, `harmful` or
  `irrelevant`, the paper's three kinds) and a one-line `note` saying what it does to
  answers; `paper_name` is the skill's label in the paper's table when the library stands for
  the paper's (Table 5), `paper_lines` the lines of the paper's text that describe it. A skill
  of the pack that is not listed, or a listed skill missing from the pack, is an error
  (`PlantedLibrary.libraries`), so a report never has to guess a kind.

Two libraries ship with the package: the demo task's (`demo_planted`, four skills picked by
measurement on the demo) and the paper's LoCoMo single-hop library (`locomo_planted`, whose
bodies the project wrote from the paper's descriptions).

Every problem is a `TaskError` with one line naming the file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from importlib import resources
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from grse_graph.errors import SkillError, TaskError
from grse_graph.skills import SkillLibrary, load_libraries, shown
from grse_graph.skills.limits import AGENT_PATTERN, MAX_NAME_CHARS, NAME_PATTERN
from grse_graph.skills.manifest import MANIFEST_FILE
from grse_graph.skills.pack import PACK_SKILLS_DIR
from grse_graph.skills.text import first_repeat
from grse_graph.tasks.io import read_json
from grse_graph.validation_text import describe_validation_error

PlantedKind = Literal["helpful", "harmful", "irrelevant"]
PLANTED_KINDS: tuple[PlantedKind, ...] = ("helpful", "harmful", "irrelevant")
"""The kinds of the paper's robustness study (Table 5: help, harm, irr.), in its order."""
PLANTED_FILE = "planted.json"
"""The file name of every planted library shipped with the package."""
LOCOMO_PLANTED_FOLDER = "locomo_planted"
"""The paper's LoCoMo single-hop library, inside `grse_graph.tasks`."""


class PlantedSkill(BaseModel):
    """One skill of a planted library and whether it helps, harms or is irrelevant (for
    reports only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: str = Field(pattern=AGENT_PATTERN.pattern, max_length=MAX_NAME_CHARS)
    skill: str = Field(pattern=NAME_PATTERN.pattern, max_length=MAX_NAME_CHARS)
    kind: PlantedKind
    note: str = Field(min_length=1)
    paper_name: str | None = Field(default=None, min_length=1)
    """The skill's label in the paper's table (Table 5), when the library stands for it."""
    paper_lines: list[int] = Field(default_factory=list)
    """Lines of the paper's text (`grse.txt`) that name or describe the skill."""

    @property
    def label(self) -> str:
        """The paper's label where given, else the skill's name."""
        return self.paper_name or self.skill

    @field_validator("note")
    @classmethod
    def _one_line(cls, value: str) -> str:
        # Notes go into report table cells: one non-blank line.
        if not value.strip() or "\n" in value or "\r" in value:
            raise ValueError("note must be one non-empty line")
        return value


class PlantedLibrary(BaseModel):
    """A planted starting library: the pack to start from and the kind of each of its skills.

    Build it with `load_planted` (or `demo_planted`), which remembers where the file is so
    `pack` can be resolved; `libraries()` then reads and cross-checks the pack.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    task: str = Field(min_length=1)
    pack: str = Field(min_length=1)
    about: str = ""
    """Where the library comes from, for a report's header (one line)."""
    skills: list[PlantedSkill]

    _source: Path = PrivateAttr(default_factory=Path)

    @field_validator("pack")
    @classmethod
    def _relative_pack(cls, value: str) -> str:
        # Relative, so the JSON and its pack move together (and ship together as package data).
        if PurePosixPath(value).is_absolute() or Path(value).is_absolute() or "\\" in value:
            raise ValueError("pack must be a path relative to the planted file, with '/'")
        return value

    @field_validator("skills")
    @classmethod
    def _unique_skills(cls, value: list[PlantedSkill]) -> list[PlantedSkill]:
        twice = first_repeat((entry.agent, entry.skill) for entry in value)
        if twice is not None:
            raise ValueError(f"skill {twice[1]!r} of agent {twice[0]!r} is listed twice")
        return value

    @property
    def source(self) -> Path:
        """The planted file this was read from (the folder `pack` is relative to)."""
        return self._source

    def pack_path(self) -> Path:
        """Where the pack is on disk."""
        return self._source.parent / self.pack

    def kind_of(self, agent: str, skill: str) -> PlantedKind | None:
        """The kind of an agent's skill, or None for a skill that was not planted (one that
        training induced, or renamed)."""
        for entry in self.skills:
            if entry.agent == agent and entry.skill == skill:
                return entry.kind
        return None

    def composition(self) -> str:
        """Each agent's planted kinds in words, e.g. `retriever: 1 helpful and 1 harmful skill;
        reasoner: ...` (agents in file order)."""
        agents = list(dict.fromkeys(entry.agent for entry in self.skills))
        parts = []
        for agent in agents:
            kinds = Counter(entry.kind for entry in self.skills if entry.agent == agent)
            counts = [(kinds[kind], kind) for kind in PLANTED_KINDS if kinds[kind]]
            said = [f"{count} {kind}" for count, kind in counts]
            words = " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 2 else said)
            # The noun follows the count next to it: "1 helpful and 2 harmful skills".
            plural = "s" if counts[-1][0] > 1 else ""
            parts.append(f"{agent}: {words} skill{plural}")
        return "; ".join(parts)

    def library_folders(self) -> dict[str, str]:
        """Each agent's library folder inside the pack (checked like `libraries`), as training
        takes them (`TrainConfig.init_libraries`)."""
        agents = self.libraries()
        root = self.pack_path().resolve()
        inside = PACK_SKILLS_DIR if (root / MANIFEST_FILE).exists() else ""
        return {agent: str(root / agent / inside) for agent in agents}

    def libraries(self, kinds: Collection[PlantedKind] | None = None) -> dict[str, SkillLibrary]:
        """The pack's libraries by agent, after checking that the pack and the list agree
        skill for skill (`TaskError` naming the first disagreement otherwise). With `kinds`,
        each agent keeps only its skills of those kinds (the paper's helpful-skills-alone
        reference: `kinds=["helpful"]`); an agent left without one has an empty library."""
        where = shown(self._source)
        try:
            libraries = load_libraries(self.pack_path())
        except SkillError as error:
            raise TaskError(f"{where}: pack {self.pack!r}: {error}") from None
        listed = {(entry.agent, entry.skill) for entry in self.skills}
        for agent, skill in sorted(listed):
            if agent not in libraries or not libraries[agent].has(skill):
                raise TaskError(
                    f"{where}: skill {skill!r} of agent {agent!r} is listed but not in the "
                    f"pack {self.pack!r}"
                )
        for agent, library in sorted(libraries.items()):
            for name in library.names():
                if (agent, name) not in listed:
                    raise TaskError(
                        f"{where}: skill {name!r} of agent {agent!r} in the pack {self.pack!r} "
                        "is not listed (give it a kind)"
                    )
        if kinds is None:
            return libraries
        unknown = sorted(set(kinds) - set(PLANTED_KINDS))
        if unknown:
            raise TaskError(
                f"{where}: unknown kind {unknown[0]!r} (kinds: {', '.join(PLANTED_KINDS)})"
            )
        kept = {}
        for agent, library in libraries.items():
            for name in library.names():
                if self.kind_of(agent, name) not in kinds:
                    library = library.remove(name)
            kept[agent] = library
        return kept


def load_planted(path: Path) -> PlantedLibrary:
    """Read and check a planted-library file (`TaskError` with one line otherwise).

    Only the file is checked here; `PlantedLibrary.libraries()` reads the pack.
    """
    path = Path(path)
    where = shown(path)
    try:
        raw = read_json(path, task_name="planted library")
    except TaskError as error:
        raise TaskError(shown(str(error))) from None
    try:
        planted = PlantedLibrary.model_validate(raw)
    except ValidationError as error:
        raise TaskError(shown(f"{where}: {describe_validation_error(error)}")) from None
    planted._source = path
    return planted


def bundled_planted(folder: str) -> PlantedLibrary:
    """A planted library shipped inside `grse_graph.tasks` (package data): `folder`'s
    `planted.json`."""
    root = resources.files("grse_graph.tasks").joinpath(folder)
    return load_planted(Path(str(root.joinpath(PLANTED_FILE))))


def demo_planted() -> PlantedLibrary:
    """The planted starting library bundled with the demo task (package data)."""
    return bundled_planted("demo_data")


def locomo_planted() -> PlantedLibrary:
    """The paper's perturbed LoCoMo single-hop library (§5.3, App. C, Table 5; package data):
    per agent one helpful skill and two harmful or irrelevant ones, bodies written by the
    project from the paper's descriptions."""
    return bundled_planted(LOCOMO_PLANTED_FOLDER)
