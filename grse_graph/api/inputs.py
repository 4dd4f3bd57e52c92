"""What the one-call API accepts for a task, a team's libraries and the model roles, resolved to
what the training and evaluation packages take (the roles opened as `grse train` and `grse eval`
open them: `call_models`); anything unusable is a one-line `GrseError`."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple, TypeAlias

from grse_graph.errors import ConfigError
from grse_graph.llm import LLMConfig, UsageLedger, load_config
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.skills import SkillLibrary, load_libraries
from grse_graph.tasks import Task, load_task
from grse_graph.team import TeamSpec
from grse_graph.training.session import open_endpoints

PathInput: TypeAlias = str | Path
LibrariesInput: TypeAlias = Mapping[str, SkillLibrary | PathInput] | PathInput
"""Libraries by agent (a `SkillLibrary` or its folder), or the path of a pack (or of a folder of
library folders) holding them."""
TaskInput: TypeAlias = str | Task
"""A built-in task's name (as `load_task` knows it) or a `Task` object."""
LLMInput: TypeAlias = LLMConfig | PathInput
"""Model roles: an `LLMConfig`, or the grse TOML file to read them from."""


def load_pack(path: PathInput) -> dict[str, SkillLibrary]:
    """The libraries by agent of a pack (checked against its manifest) or of a folder of library
    folders (`<path>/<agent>/<skill>/SKILL.md`)."""
    return load_libraries(path)


def resolve_task(task: TaskInput, *, data: PathInput | None, category: str | None) -> Task:
    """The task to run: loaded by name (with its data and category), or the object given."""
    if isinstance(task, str):
        return load_task(task, data, category=category)
    if data is not None or category is not None:
        # A Task object is already loaded: silently ignoring them would run other questions.
        raise ConfigError(f"task {task.name!r}: data and category only go with a task name")
    return task


def _library(agent: str, value: SkillLibrary | PathInput) -> SkillLibrary:
    if isinstance(value, SkillLibrary):
        if value.agent != agent:
            raise ConfigError(
                f"libraries: the library of agent {value.agent!r} is given for {agent!r}"
            )
        return value
    folder = Path(value)
    if not folder.is_dir():
        raise ConfigError(f"libraries: {agent}={folder} is not a folder")
    return SkillLibrary.load(folder, agent=agent)


def resolve_libraries(
    libraries: LibrariesInput | None, *, limit: int | None = None
) -> dict[str, SkillLibrary]:
    """The libraries by agent (empty for None); with `limit`, each held to it (a library over
    the limit is a one-line `SkillError`, as when a run loads its starting folders)."""
    if libraries is None:
        return {}
    if isinstance(libraries, str | Path):
        loaded = load_pack(libraries)
    else:
        loaded = {agent: _library(agent, value) for agent, value in libraries.items()}
    if limit is None:
        return loaded
    return {
        agent: SkillLibrary.build(agent, library.skills, limit, source=f"library of {agent!r}")
        for agent, library in loaded.items()
    }


def team_with(team: TeamSpec, libraries: Mapping[str, SkillLibrary]) -> TeamSpec:
    """`team` with these libraries; an agent the team lacks is a one-line `ConfigError`."""
    unknown = sorted(set(libraries) - set(team.agent_names))
    if unknown:
        raise ConfigError(
            f"libraries: agent {unknown[0]!r} is not in the team "
            f"(agents: {', '.join(team.agent_names)})"
        )
    return team.with_libraries(libraries)


def resolve_llm(llm: LLMInput | None) -> LLMConfig:
    """The model roles: the config given, read from a TOML file, or from the environment
    (`GRSE_<ROLE>_<FIELD>`) over the defaults, as `grse` reads them."""
    if isinstance(llm, LLMConfig):
        return llm
    return load_config(Path(llm) if llm is not None else None)


class CallModels(NamedTuple):
    """The provider of one call; `ledger` is the one of endpoints the call opened itself (None
    for the caller's provider, whose accounting is the caller's)."""

    provider: ChatModelProvider
    ledger: UsageLedger | None = None


@contextlib.contextmanager
def call_models(
    provider: ChatModelProvider | None, llm: LLMInput | None, *, engine_log: Path | None = None
) -> Iterator[CallModels]:
    """`provider` when given; else the roles of `llm` with the embedded engine started when a
    role uses it (`open_endpoints`), stopped again on exit."""
    if provider is not None:
        yield CallModels(provider)
        return
    with open_endpoints(resolve_llm(llm), engine_log=engine_log) as endpoints:
        yield CallModels(endpoints.roles, endpoints.ledger)
