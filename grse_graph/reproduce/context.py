"""What a table is built from: the paper's settings and numbers, the actors (one grse TOML
each), the seeds, the size (full, `--limit`, `--smoke`), the data paths and the results root."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from rich.console import Console

from grse_graph.errors import ConfigError
from grse_graph.llm import LLMConfig, load_config
from grse_graph.validation_text import describe_validation_error

from .executors import RunContext
from .paper import PaperTable
from .settings import PaperSettings, SmokeSize


@dataclass(frozen=True)
class Actor:
    """One actor column group: its label (the run ids' actor) and its endpoints."""

    label: str
    llm: LLMConfig


def actor_label(llm: LLMConfig) -> str:
    """The actor's model as named in run ids: the served model, or `embedded-<model>`."""
    actor = llm.role("actor")
    if not actor.embedded:
        return actor.model
    return f"embedded-{Path(llm.embedded_model('actor')).stem}"


def smoke_overrides(smoke: SmokeSize) -> dict[str, object]:
    """The LLM overrides of the smoke size: the small embedded model and small caps."""
    return {
        "engine.model": smoke.engine_model,
        **{f"{role}.max_tokens": cap for role, cap in smoke.caps.items()},
    }


def load_actors(configs: list[Path], smoke: SmokeSize | None) -> list[Actor]:
    """One actor per grse TOML (none given: the environment's roles), smoke-sized on request."""
    overrides = smoke_overrides(smoke) if smoke is not None else None
    llms = [load_config(path, overrides=overrides) for path in configs] or [
        load_config(overrides=overrides)
    ]
    return [Actor(actor_label(llm), llm) for llm in llms]


FIXTURES_FILE = "fixtures.json"


class FixtureTask(BaseModel):
    """One task's fixture: its data file (relative to the fixtures folder) and the options of
    its loader (`load_task`'s: the fixture's split sizes)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str
    options: dict[str, Any] = {}


class Fixtures(BaseModel):
    """A folder of data fixtures standing in for the benchmarks (`--fixtures DIR`): what they
    are (printed at the top of every table) and each task's file and loader options."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    about: str
    tasks: dict[str, FixtureTask]

    def data(self, folder: Path) -> dict[str, str]:
        """Each task's fixture file, resolved against `folder`."""
        return {task: str((folder / f.file).resolve()) for task, f in self.tasks.items()}

    def options(self) -> dict[str, dict[str, Any]]:
        """Each task's loader options."""
        return {task: dict(f.options) for task, f in self.tasks.items()}


def load_fixtures(folder: Path) -> Fixtures:
    """`fixtures.json` of `folder`; a missing or invalid file is one `ConfigError` line."""
    path = folder / FIXTURES_FILE
    try:
        return Fixtures.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the fixtures ({error.strerror})") from None
    except json.JSONDecodeError as error:
        raise ConfigError(f"{path}: not JSON ({error.msg}, line {error.lineno})") from None
    except ValidationError as error:
        raise ConfigError(f"{path}: {describe_validation_error(error)}") from None


def current_commit(repo: Path | None = None) -> str:
    """The short commit of the checkout this package runs from (`unknown` outside git)."""
    where = repo or Path(__file__).resolve().parents[2]
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() or "unknown"


@dataclass(frozen=True)
class TableContext:
    """Everything a table definition reads to plan and build its table."""

    settings: PaperSettings
    papers: dict[str, PaperTable]
    actors: list[Actor]
    seeds: list[int]
    smoke: bool
    limit: int | None
    commit: str
    data: dict[str, str | None]
    root: Path
    planted: Path | None = None
    paper_mode: bool = False
    """Train in the paper's mode: the project's additions to the method off."""
    train_overrides: dict[str, int] = field(default_factory=dict)
    """Loop sizes given on the command line (iterations, batch_size, validation_size,
    group_size) over Table 8's or the smoke size: a machine-sized run, printed as deviations."""
    console: Console = field(default_factory=Console)
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each task's loader options (`load_task`'s), from `--fixtures`."""
    fixtures: str | None = None
    """What the data fixtures are (`--fixtures`; None: the benchmarks' data)."""

    @property
    def paper(self) -> PaperTable:
        """The paper's numbers of the (first) table being built."""
        return next(iter(self.papers.values()))

    def paper_of(self, table: str) -> PaperTable:
        """The paper's numbers of one of the tables being built."""
        return self.papers[table]

    def test_limit(self) -> int | None:
        """Test questions per evaluation: the smoke size, `--limit`, or the whole split."""
        return self.settings.smoke.test_questions if self.smoke else self.limit

    def run_context(self, actor: Actor) -> RunContext:
        """The executors' context of one actor."""
        return RunContext(
            llm=actor.llm, data=self.data, console=self.console, task_options=self.task_options
        )
