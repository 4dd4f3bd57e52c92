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

from grse_graph.llm import LLMConfig, LocalEngine, ModelRoles, UsageLedger
from grse_graph.llm.accounting import UsageReport
from grse_graph.tasks.base import Task
from grse_graph.tasks.registry import load_task

from .config import TrainConfig
from .graph import TrainingDeps
from .progress import ProgressCallback
from .run_folder import RunFolder


@dataclass
class Endpoints:
    """The running model side of a session: roles, their ledger, and the engine if embedded."""

    roles: ModelRoles
    ledger: UsageLedger
    engine: LocalEngine | None


@contextlib.contextmanager
def open_endpoints(llm: LLMConfig, engine_log: Path | None = None) -> Iterator[Endpoints]:
    """Start the embedded engine when a role needs it, and build the roles on top of it.

    The engine is stopped and the HTTP clients are closed on exit.
    """
    ledger = UsageLedger()
    with contextlib.ExitStack() as stack:
        engine: LocalEngine | None = None
        engine_url: str | None = None
        if llm.uses_embedded_engine():
            engine = stack.enter_context(LocalEngine(llm.engine, log_path=engine_log))
            engine_url = engine.base_url
            ledger.attach_engine_stats(engine.prompt_eval_stats)
        roles = stack.enter_context(ModelRoles(llm, ledger, engine_url=engine_url))
        yield Endpoints(roles=roles, ledger=ledger, engine=engine)


def load_training_task(config: TrainConfig) -> Task:
    """The configured task, read from `config.data` when given, restricted to
    `config.category` when one is set."""
    task: Task = load_task(config.task, data=config.data, category=config.category)
    return task


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


def run_usage(run: RunFolder, ledger: UsageLedger) -> Callable[[], dict[str, Any]]:
    """The run's usage so far: the earlier sessions' usage.json (read once, now) plus this
    session's ledger, so a resumed run neither loses nor double-counts a session."""
    recorded = dict(run.read_usage())
    recorded.pop("total", None)  # derived on dump
    earlier = UsageReport.model_validate(recorded)
    return lambda: (earlier + ledger.report()).model_dump(mode="json")
