"""`evaluate(task, ...)`: the team with given libraries on one split, greedily, through
`run_evaluation` as `grse eval` runs it (resumable evaluation folder, usage.json beside it)."""

from __future__ import annotations

from pathlib import Path

from grse_graph.evaluation import EvalSummary, run_evaluation
from grse_graph.evaluation.langsmith_eval import run_sync
from grse_graph.llm import ModelRoles
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.team import SkillMode, TeamSpec, default_team

from .inputs import (
    LibrariesInput,
    LLMInput,
    PathInput,
    TaskInput,
    call_models,
    resolve_libraries,
    resolve_task,
    team_with,
)

USAGE_FILE = "usage.json"
"""The evaluation folder's usage file, as `grse eval` writes it."""


def evaluate(
    task: TaskInput,
    *,
    libraries: LibrariesInput | None = None,
    split: str = "test",
    limit: int | None = None,
    out: PathInput | None = None,
    provider: ChatModelProvider | None = None,
    llm: LLMInput | None = None,
    data: PathInput | None = None,
    category: str | None = None,
    team: TeamSpec | None = None,
    skill_mode: SkillMode = "inline",
    topology: str = "sequential",
    tool_protocol: str = "function",
    concurrency: int | None = None,
    progress: bool = False,
) -> EvalSummary:
    """Evaluate the team with `libraries` on the first `limit` questions of `split` (greedy
    decoding) and return the summary (overall and per-category scores).

    `libraries`: by agent (a `SkillLibrary` or its folder), or a pack path; agents without one
    run without skills. `out`: the evaluation folder (default runs/team-<task>-<split>); a
    finished question in it is not asked again. `task`, `data` and `category` as for `train`;
    `team` replaces the task's default team (`skill_mode`, `topology` and `tool_protocol`,
    function calling or the paper's text calls, shape the default one only). Models:
    `provider`, else the roles of `llm`, with the embedded engine started for the evaluation
    when a role uses it (`open_endpoints`, as for `train`). `progress` prints the progress bar
    and the summary table.
    """
    loaded = resolve_task(task, data=data, category=category)
    # `with_topology` checks the name at once, as `grse eval --topology` does.
    base = (
        team
        if team is not None
        else default_team(loaded, skill_mode=skill_mode, tool_protocol=tool_protocol).with_topology(
            topology
        )
    )
    spec = team_with(base, resolve_libraries(libraries))
    folder = Path(out) if out is not None else Path("runs") / f"team-{loaded.name}-{split}"

    with call_models(provider, llm) as (models, ledger):
        parallel = models.concurrency("actor") if isinstance(models, ModelRoles) else 1
        summary = run_sync(
            run_evaluation(
                loaded,
                split,
                spec,
                models,
                folder,
                limit=limit,
                concurrency=concurrency or parallel,
                sampling=SamplingSettings.greedy(),
                progress=progress,
                data=str(Path(data).resolve()) if data is not None else None,
            )
        )
        if ledger is not None:
            ledger.write_json(folder / USAGE_FILE, accumulate=True)
    return summary
