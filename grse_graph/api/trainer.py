"""`train(task, ...)`: one training run in one call, on the session code `grse train` uses
(`open_endpoints` / `run_training`), or on a provider the caller brings (`call_models`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grse_graph.evaluation.langsmith_eval import run_sync
from grse_graph.llm import UsageLedger
from grse_graph.llm.provider import ChatModelProvider
from grse_graph.methods.registry import MethodClass
from grse_graph.team import TeamSpec
from grse_graph.training.context import TrainingDeps
from grse_graph.training.progress import ProgressCallback
from grse_graph.training.run_folder import RunFolder, default_run_dir
from grse_graph.training.runner import Reviewer, TrainResult, run_training
from grse_graph.training.session import load_training_task, run_usage, usage_kept_on_failure

from .config import ConfigInput, MethodChoice, check_method, method_registry, train_config
from .inputs import (
    LibrariesInput,
    LLMInput,
    PathInput,
    TaskInput,
    call_models,
    resolve_libraries,
    resolve_llm,
    team_with,
)


def _ledger_usage(
    provider: ChatModelProvider, run: RunFolder
) -> Callable[[], dict[str, Any]] | None:
    # A provider that keeps a ledger (`ModelRoles`) is accounted as a session's endpoints are;
    # any other provider (a test's fake) counts nothing, so the run reports no usage.
    ledger = getattr(provider, "ledger", None)
    return run_usage(run, ledger) if isinstance(ledger, UsageLedger) else None


def train(
    task: TaskInput,
    *,
    method: MethodChoice | None = None,
    libraries: LibrariesInput | None = None,
    config: ConfigInput | None = None,
    run_dir: PathInput | None = None,
    provider: ChatModelProvider | None = None,
    llm: LLMInput | None = None,
    methods: Mapping[str, MethodClass] | None = None,
    team: TeamSpec | None = None,
    reviewer: Reviewer | None = None,
    on_progress: ProgressCallback | None = None,
) -> TrainResult:
    """Train a team's skill libraries on `task` and return the result: the final libraries
    (`libraries`, by agent, and their folders), each iteration's validation `scores`, the
    gates, the run folder and the usage.

    `method`: a name (default GRSE, or the config's), a settings section, or a method class of
    your own (`methods` registers more by name). `libraries`: where the agents start (by agent,
    a `SkillLibrary` or its folder; or a pack path); default the config's `init_libraries`, else
    empty. `config`: a `TrainConfig`, or a mapping of its fields completed with the task's
    protocol values as `grse train` does. `run_dir`: a new folder (default runs/<task>-<time>).
    Models: `provider` (any `ChatModelProvider`), else the roles of `llm` (an `LLMConfig` or a
    grse TOML; default the environment), with the embedded engine started for the run when a
    role uses it. `team` replaces the task's default team (e.g. `graph_team`); `reviewer`
    answers the review of each skill edit when the config has `review` on.
    """
    name = task if isinstance(task, str) else task.name
    registry = method_registry(method, methods)
    cfg = train_config(
        name,
        config,
        method,
        methods=registry,
        training_top_k=lambda: resolve_llm(llm).training_top_k(),
    )
    check_method(cfg, registry)
    loaded = load_training_task(cfg) if isinstance(task, str) else task
    starting = resolve_libraries(libraries, limit=cfg.library_limit)
    if libraries is not None:
        # The libraries given replace the config's folders; config.json must not claim those.
        cfg = cfg.model_copy(update={"init_libraries": {}})
    run = RunFolder(run_dir if run_dir is not None else default_run_dir(name))
    initial = starting if libraries is not None else None
    with call_models(provider, llm, engine_log=run.path / "engine.log") as (models, _):
        deps = TrainingDeps(
            task=loaded,
            provider=models,
            config=cfg,
            run=run,
            team=team,
            initial_libraries=initial,
            on_progress=on_progress,
            usage=_ledger_usage(models, run),
            methods=registry,
        )
        if starting:
            team_with(deps.team_spec(), starting)  # an agent the team lacks: one line, no run
        with usage_kept_on_failure(deps):
            return run_sync(run_training(deps, reviewer=reviewer))
