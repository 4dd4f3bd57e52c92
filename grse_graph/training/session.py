"""A training session on real endpoints: engine (when embedded), model roles, task, run.

Shared by `grse train`, `grse demo` and the iteration benchmark so all three start the engine,
account usage and write the run folder the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grse_graph.llm import LLMConfig, ModelRoles, UsageLedger
from grse_graph.llm.accounting import PromptEvalStats, UsageReport
from grse_graph.llm.engine import LocalEngine
from grse_graph.methods.registry import create_method
from grse_graph.tasks.base import Task
from grse_graph.tasks.registry import load_task

from .config import TrainConfig
from .graph import TrainingDeps
from .ids import train_questions, validation_ids
from .progress import ProgressCallback
from .run_folder import RunFolder


@dataclass
class Endpoints:
    """The running model side of a session: roles, their ledger, and the embedded engines
    (one per embedded model, the first one's in `engine`)."""

    roles: ModelRoles
    ledger: UsageLedger
    engines: dict[str, LocalEngine]

    @property
    def engine(self) -> LocalEngine | None:
        """The first embedded engine (the actor's when it is embedded), or None."""
        return next(iter(self.engines.values()), None)

    def prompt_eval_stats(self) -> PromptEvalStats:
        """The prompt statistics of every embedded engine, summed, with the slot pinning's
        prefix reloads."""
        return engine_stats(self.engines, self.roles)


def summed_stats(engines: dict[str, LocalEngine]) -> PromptEvalStats:
    """The prompt statistics of the engines, summed."""
    total = PromptEvalStats()
    for engine in engines.values():
        total = total + engine.prompt_eval_stats()
    return total


def engine_stats(engines: dict[str, LocalEngine], roles: ModelRoles) -> PromptEvalStats:
    """The engines' prompt statistics, summed, with the slot pinning's prefix reloads."""
    return summed_stats(engines).model_copy(update={"prefix_reloads": roles.prefix_reloads()})


def engine_log_path(engine_log: Path | None, model: str, first: bool) -> Path | None:
    """Where an engine of a session logs: `engine_log` for the first, a sibling named after
    the model for the others (None: the engine's default)."""
    if engine_log is None or first:
        return engine_log
    return engine_log.with_name(f"{engine_log.stem}-{Path(model).stem}{engine_log.suffix}")


@contextlib.contextmanager
def open_endpoints(llm: LLMConfig, engine_log: Path | None = None) -> Iterator[Endpoints]:
    """Start one embedded engine per embedded model the roles need, and build the roles on top
    of them.

    The engines are stopped and the HTTP clients are closed on exit.
    """
    ledger = UsageLedger()
    with contextlib.ExitStack() as stack:
        engines: dict[str, LocalEngine] = {}
        for index, model in enumerate(llm.embedded_models()):
            settings = llm.engine.model_copy(update={"model": model})
            log = engine_log_path(engine_log, model, first=index == 0)
            engines[model] = stack.enter_context(LocalEngine(settings, log_path=log))
        urls = {model: engine.base_url for model, engine in engines.items()}
        slots = {engine.base_url: engine.slots for engine in engines.values()}
        roles = stack.enter_context(
            ModelRoles(llm, ledger, engine_url=urls or None, engine_slots=slots)
        )
        if engines:
            ledger.attach_engine_stats(lambda: engine_stats(engines, roles))
        yield Endpoints(roles=roles, ledger=ledger, engines=engines)


def load_training_task(config: TrainConfig) -> Task:
    """The configured task, read from `config.data` when given, restricted to
    `config.category` when one is set."""
    task: Task = load_task(config.task, data=config.data, category=config.category)
    return task


def check_training_splits(task: Task, config: TrainConfig) -> None:
    """Check every split the run will read: the train split, the probe's split under probe
    credit, and the validation split when the method validates in any round (a one-line
    `GrseError` otherwise). Called before an engine starts, so a split the data lacks costs no
    engine start."""
    train_questions(task)
    if config.probe is not None:
        task.split(config.probe.split)
    method = create_method(config.method)
    # One round past the last: a method may measure its final libraries there (SkillMAS).
    rounds = range(1, config.iterations + 2)
    if any(method.commit_policy(i, config.iterations).runs_validation for i in rounds):
        validation_ids(task, config)


def session_deps(
    config: TrainConfig,
    run: RunFolder,
    endpoints: Endpoints,
    *,
    task: Task | None = None,
    on_progress: ProgressCallback | None = None,
) -> TrainingDeps:
    """The training graph's dependencies for a real session (usage read from the ledger, added
    to what earlier sessions of the run folder recorded)."""
    return TrainingDeps(
        task=task or load_training_task(config),
        provider=endpoints.roles,
        config=config,
        run=run,
        on_progress=on_progress,
        usage=run_usage(run, endpoints.ledger),
    )


def write_run_usage(deps: TrainingDeps) -> None:
    """usage.json: this session added to the earlier sessions of the run (`deps.usage`; none
    when the provider keeps no ledger)."""
    if deps.usage is not None:
        deps.run.write_usage(deps.usage())


@contextlib.contextmanager
def usage_kept_on_failure(deps: TrainingDeps) -> Iterator[None]:
    """A session that stops on an error still writes usage.json: the retries and failures in
    it explain the stop. The session's own error stays the one raised."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            write_run_usage(deps)
        raise


def run_usage(run: RunFolder, ledger: UsageLedger) -> Callable[[], dict[str, Any]]:
    """The run's usage so far: the earlier sessions' usage.json (read once, now) plus this
    session's ledger, so a resumed run neither loses nor double-counts a session."""
    earlier = UsageReport.model_validate(run.read_usage())
    return lambda: (earlier + ledger.report()).model_dump(mode="json")
