"""`grse eval` (the team) and `grse baseline` (single-model methods) over a task split."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Annotated, cast, get_args

import typer
from rich.console import Console
from rich.table import Table

from grse_graph.baselines import BASELINES, BaselineName, make_baseline
from grse_graph.errors import ConfigError
from grse_graph.evaluation import QuestionAnswerer, TeamAnswerer, run_evaluation
from grse_graph.evaluation.langsmith_eval import (
    LangSmithSummary,
    pack_team,
    run_langsmith_eval,
    team_target,
)
from grse_graph.llm.accounting import UsageLedger
from grse_graph.llm.config import LLMConfig, load_config
from grse_graph.llm.engine import LocalEngine
from grse_graph.llm.provider import SamplingSettings
from grse_graph.llm.roles import ModelRoles
from grse_graph.skills import SkillLibrary
from grse_graph.tasks import TASK_NAMES, Task, load_task
from grse_graph.team import TOPOLOGY_NAMES, SkillMode, TeamSpec, default_team
from grse_graph.training.session import engine_stats

from .option_groups import OptionGroup, typer_command
from .options import ConfigOption, JsonOption, print_json, report_console

USAGE_FILE = "usage.json"
LANGSMITH_FILE = "langsmith.json"

# Builds the answerer once the provider (and possibly the engine) exists.
AnswererFactory = Callable[[ModelRoles], QuestionAnswerer]

TaskOption = Annotated[str, typer.Option("--task", "-t", help=f"One of {', '.join(TASK_NAMES)}.")]
DataOption = Annotated[
    Path | None, typer.Option("--data", help="The task's data file or folder (see `load_task`).")
]
SplitOption = Annotated[str, typer.Option("--split", help="train, validation or test.")]
LimitOption = Annotated[
    int | None, typer.Option("--limit", min=1, help="Only the first N questions of the split.")
]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Output folder (default runs/<method>-<task>-<split>); resumable."),
]
ConcurrencyOption = Annotated[
    int | None,
    typer.Option("--concurrency", min=1, help="Questions at once (default: actor concurrency)."),
]
CategoryOption = Annotated[
    str | None,
    typer.Option(
        "--category",
        help="LoCoMo: multi-hop, temporal, open-domain, single-hop or mixed (default: all).",
    ),
]
# The team's options, shared with `grse skills audit`.
LibraryOption = Annotated[
    list[str] | None,
    typer.Option(
        "--library", metavar="AGENT=DIR", help="A skill library for one agent (repeatable)."
    ),
]
PackOption = Annotated[
    Path | None,
    typer.Option("--pack", metavar="PACK", help="A trained pack: every agent's library in it."),
]
SkillModeOption = Annotated[
    str,
    typer.Option(
        "--skill-mode",
        help="inline (bodies in the prompt), tool (load_skill) or path (as packs ship).",
    ),
]
TopologyOption = Annotated[
    str,
    typer.Option("--topology", help=f"How the agents are connected: {', '.join(TOPOLOGY_NAMES)}."),
]
ToolProtocolOption = Annotated[
    str,
    typer.Option(
        "--tool-protocol",
        help="How the agents call their tools: function (function calling) or text (the "
        "paper's <grep>pattern</grep> calls, parsed by the environment).",
    ),
]
ModelOption = Annotated[
    str | None,
    typer.Option("--model", help="Embedded engine model: small, default, medium or a .gguf path."),
]


def parse_library_option(value: str) -> tuple[str, Path]:
    """`AGENT=DIR` -> (agent, folder)."""
    agent, sep, folder = value.partition("=")
    if not sep or not agent.strip() or not folder.strip():
        raise ConfigError(f"--library {value!r}: expected AGENT=DIR, e.g. reasoner=skills/reasoner")
    return agent.strip(), Path(folder.strip())


def library_folders(values: list[str], option: str) -> dict[str, Path]:
    """`OPTION AGENT=DIR` values -> agent: folder (each an existing folder, one per agent)."""
    folders: dict[str, Path] = {}
    for value in values:
        agent, folder = parse_library_option(value)
        if agent in folders:
            raise ConfigError(f"{option} {value!r}: agent {agent!r} is given twice")
        if not folder.is_dir():
            raise ConfigError(f"{option} {value!r}: {folder} is not a folder")
        folders[agent] = folder
    return folders


def load_libraries(values: list[str]) -> dict[str, SkillLibrary]:
    """Skill libraries from `--library AGENT=DIR` options (one per agent)."""
    return {
        agent: SkillLibrary.load(folder, agent=agent)
        for agent, folder in library_folders(values, "--library").items()
    }


def describe_actor(config: LLMConfig) -> str:
    """The actor model as recorded in `run.json` (the engine's port is left out: it changes)."""
    actor = config.role("actor")
    if actor.embedded:
        return f"embedded:{config.embedded_model('actor')}"
    return f"{actor.base_url} {actor.model}"


@contextmanager
def actor_provider(config: LLMConfig, console: Console) -> Iterator[ModelRoles]:
    """`ModelRoles` for the run; starts the embedded engine for its duration when the actor
    role uses it (base_url None) and stops it afterwards."""
    ledger = UsageLedger()
    with ExitStack() as stack:
        engine_url: dict[str, str] | None = None
        engine_slots: dict[str, int] = {}
        engines: dict[str, LocalEngine] = {}
        if config.role("actor").embedded:
            model = config.embedded_model("actor")
            console.print(f"starting the embedded engine (model {model}) ...")
            engine = stack.enter_context(
                LocalEngine(config.engine.model_copy(update={"model": model}))
            )
            engines[model] = engine
            engine_url = {model: engine.base_url}
            engine_slots = {engine.base_url: engine.slots}
            console.print(
                f"engine {engine.engine_name} ready at {engine.base_url} "
                f"({engine.slots} prefix slot(s))"
            )
        roles = stack.enter_context(
            ModelRoles(config, ledger, engine_url=engine_url, engine_slots=engine_slots)
        )
        if engines:
            ledger.attach_engine_stats(lambda: engine_stats(engines, roles))
        yield roles


class SplitRun(OptionGroup):
    """The options `grse eval` and `grse baseline` share: the split and how much of it, the
    output folder and the models."""

    split: SplitOption = "test"
    limit: LimitOption = None
    out: OutOption = None
    config: ConfigOption = None
    concurrency: ConcurrencyOption = None
    model: ModelOption = None

    def out_dir(self, method: str, task: Task) -> Path:
        """`--out`, or runs/<method>-<task>-<split>."""
        return self.out or Path("runs") / f"{method}-{task.name}-{self.split}"

    def llm_config(self) -> LLMConfig:
        """The `--config` file with `--model` over its engine model."""
        return load_config(self.config, overrides={"engine.model": self.model})


def _run(
    *,
    method: str,
    task: Task,
    data: Path | None,
    run: SplitRun,
    answerer_for: AnswererFactory,
    as_json: bool = False,
) -> None:
    console = report_console(as_json)
    config = run.llm_config()
    out_dir = run.out_dir(method, task)
    with actor_provider(config, console) as provider:
        answerer = answerer_for(provider)
        summary = asyncio.run(
            run_evaluation(
                task,
                run.split,
                answerer,
                provider,
                out_dir,
                limit=run.limit,
                concurrency=run.concurrency or provider.concurrency("actor"),
                sampling=SamplingSettings.greedy(),
                data=str(data.resolve()) if data is not None else None,
                model=describe_actor(config),
                console=console,
            )
        )
        provider.ledger.write_json(out_dir / USAGE_FILE, accumulate=True)
    console.print(f"results in {out_dir}")
    if as_json:
        print_json(summary)


def langsmith_table(summary: LangSmithSummary) -> Table:
    """Mean official scores of a LangSmith experiment."""
    where = "uploaded" if summary.uploaded else "offline, nothing uploaded"
    table = Table(title=f"LangSmith experiment {summary.experiment} ({where})")
    for column in ("examples", "failed", *summary.means):
        table.add_column(column, justify="right")
    table.add_row(
        str(summary.examples),
        str(summary.failed),
        *(f"{value:.3f}" for value in summary.means.values()),
    )
    return table


def _run_langsmith(spec: TeamSpec, task: Task, run: SplitRun, *, as_json: bool) -> None:
    console = report_console(as_json)
    config = run.llm_config()
    out_dir = run.out_dir("langsmith", task)
    # LangSmith prints its experiment banner on stdout, which holds the JSON result then.
    quiet = contextlib.redirect_stdout(sys.stderr) if as_json else contextlib.nullcontext()
    with actor_provider(config, console) as provider, quiet:
        summary = asyncio.run(
            run_langsmith_eval(
                team_target(spec, task, provider),
                task,
                run.split,
                limit=run.limit,
                concurrency=run.concurrency or provider.concurrency("actor"),
            )
        )
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / LANGSMITH_FILE).write_text(summary.model_dump_json(indent=2) + "\n", "utf-8")
        provider.ledger.write_json(out_dir / USAGE_FILE, accumulate=True)
    console.print(langsmith_table(summary))
    console.print(f"results in {out_dir / LANGSMITH_FILE}")
    if as_json:
        print_json(summary)


class QuestionOptions(OptionGroup):
    """Which questions are answered: the task, its data and one category (`grse eval`,
    `grse baseline` and `grse skills audit`)."""

    task: TaskOption
    data: DataOption = None
    category: CategoryOption = None

    def load(self) -> Task:
        """The task (`load_task`): a wrong name, path or category is one line."""
        return load_task(self.task, self.data, category=self.category)


class TeamOptions(OptionGroup):
    """The team that answers: its libraries (`--library AGENT=DIR` or a `--pack`), how its
    agents see their skills, its topology and tool protocol (`grse eval` and
    `grse skills audit`)."""

    library: LibraryOption = None
    pack: PackOption = None
    skill_mode: SkillModeOption = "inline"
    topology: TopologyOption = "sequential"
    tool_protocol: ToolProtocolOption = "function"

    def checked_skill_mode(self) -> SkillMode:
        """The checked `--skill-mode`, refusing `--pack` and `--library` together (one line)."""
        known = get_args(SkillMode)
        if self.skill_mode not in known:
            raise ConfigError(
                f"--skill-mode {self.skill_mode!r}: expected one of {', '.join(known)}"
            )
        if self.pack is not None and self.library:
            raise ConfigError("--pack and --library: give the libraries one way")
        return cast(SkillMode, self.skill_mode)

    def team(self, task: Task, mode: SkillMode) -> TeamSpec:
        """The task's team with the `--pack` or `--library AGENT=DIR` libraries, `mode` (the
        checked `--skill-mode`), `--topology` and `--tool-protocol`."""
        if self.pack is not None:
            spec = pack_team(self.pack, task, skill_mode=mode)
        else:
            spec = default_team(task, load_libraries(self.library or []), skill_mode=mode)
        return spec.with_topology(self.topology).with_tool_protocol(self.tool_protocol)


def eval_command(
    questions: QuestionOptions,
    team: TeamOptions,
    run: SplitRun,
    langsmith: Annotated[
        bool,
        typer.Option(
            "--langsmith",
            help="Run as a LangSmith experiment with the official scorers (uploaded when "
            "LANGSMITH_API_KEY is set, otherwise offline with upload_results=False).",
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Evaluate the two-agent team (greedy decoding) on a task split; resumable."""
    mode = team.checked_skill_mode()
    loaded = questions.load()
    spec = team.team(loaded, mode)
    if langsmith:
        _run_langsmith(spec, loaded, run, as_json=as_json)
        return

    def answerer(provider: ModelRoles) -> QuestionAnswerer:
        return TeamAnswerer(spec, loaded, provider, SamplingSettings.greedy())

    _run(
        method="team",
        task=loaded,
        data=questions.data,
        run=run,
        answerer_for=answerer,
        as_json=as_json,
    )


def baseline_command(
    method: Annotated[str, typer.Option("--method", "-m", help=" | ".join(BASELINES))],
    questions: QuestionOptions,
    run: SplitRun,
    as_json: JsonOption = False,
) -> None:
    """Evaluate a single-model baseline on a task split, writing the same files as `grse eval`."""
    if method not in BASELINES:
        raise ConfigError(f"--method {method!r}: expected one of {', '.join(BASELINES)}")
    chosen = cast(BaselineName, method)
    loaded = questions.load()

    def baseline(provider: ModelRoles) -> QuestionAnswerer:
        return make_baseline(chosen, loaded, provider, SamplingSettings.greedy())

    _run(
        method=method,
        task=loaded,
        data=questions.data,
        run=run,
        answerer_for=baseline,
        as_json=as_json,
    )


def register(app: typer.Typer) -> None:
    """Register the `eval` and `baseline` commands on the app."""
    app.command("eval")(typer_command(eval_command))
    app.command("baseline")(typer_command(baseline_command))
