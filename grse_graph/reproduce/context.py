"""What a table is built from: the paper's settings and numbers, the actors (one grse TOML
each), the seeds, the size (full, `--limit`, `--smoke`), the data sources, the mode and the
results root."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from grse_graph.llm import LLMConfig, load_config

from .data import DataSource, paper_test_size
from .executors import RunContext
from .manifest import RunSpec
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


def current_commit() -> str:
    """The short commit of the checkout this package runs from (`unknown` outside git)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "--short=7", "HEAD"],
            cwd=Path(__file__).resolve().parents[2],
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
    design: str | None = None
    """A table's named design (Tables 4-5: `t45_designs.REPAIR_DESIGNS`; None: its default)."""
    paper_mode: bool = True
    """Train in the paper's mode: the project's additions to the method off (the default;
    `--additions` turns them on)."""
    train_overrides: dict[str, int] = field(default_factory=dict)
    """Loop sizes given on the command line (iterations, batch_size, validation_size,
    group_size) over Table 8's or the smoke size: a machine-sized run, printed as deviations."""
    console: Console = field(default_factory=Console)
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The loader options (`load_task`'s) of each task on fixtures (`--fixtures`, `--smoke`)."""
    fixtures: str | None = None
    """What the data fixtures are (`--fixtures`, `--smoke`; None: the benchmarks' data)."""
    sources: dict[str, DataSource] = field(default_factory=dict)
    """Where each benchmark's data comes from (`data` holds their paths) and its splits."""

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

    def loader_options(self) -> dict[str, dict[str, Any]]:
        """Each task's loader options: its source's splits (the paper's), or its fixture's."""
        return {
            **{task: dict(source.options) for task, source in self.sources.items()},
            **self.task_options,
        }

    def run_context(self, actor: Actor) -> RunContext:
        """The executors' context of one actor."""
        return RunContext(
            llm=actor.llm, data=self.data, console=self.console, task_options=self.loader_options()
        )

    def test_split_size(self, spec: RunSpec) -> int | None:
        """The size of the test split `spec` reads: the paper's where its data is not on this
        machine (the hub's positions, or none given: a dry run), else by loading it (None when
        that fails: the run's failure, not the header's)."""
        source = self.sources.get(spec.task)
        if source is not None and not source.local:
            return paper_test_size(self.settings, spec.task, spec.category)
        try:
            return len(self.run_context(self.actors[0]).task(spec).split("test"))
        except Exception:  # a missing data file is the run's failure, not the header's
            return None
