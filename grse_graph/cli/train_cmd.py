"""`grse train` (training with any registered credit method, resumable, reviewable) and
`grse demo` (the main job)."""

from __future__ import annotations

import asyncio
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from grse_graph.checkpointing import CheckpointerSpec
from grse_graph.cli.eval_cmd import library_folders
from grse_graph.cli.options import (
    ConfigOption,
    JsonOption,
    PanelledCommand,
    print_json,
    report_console,
)
from grse_graph.errors import ConfigError
from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.registry import BUILTIN_METHODS, METHOD_NAMES, MethodClass, method_class
from grse_graph.output import output_console
from grse_graph.skills import PACK_SKILLS_DIR, check_pack_destination, import_pack
from grse_graph.tasks.base import Task
from grse_graph.tasks.planted import PlantedLibrary, demo_planted
from grse_graph.team import default_team
from grse_graph.team.topology import TOPOLOGY_NAMES
from grse_graph.training.config import (
    TrainConfig,
    protocol_train_config,
    refuse_unread_settings,
)
from grse_graph.training.demo import (
    DEMO_SETTINGS,
    DEMO_TEST_LIMIT,
    DemoResult,
    demo_llm_overrides,
    learning_config,
    print_comparison,
    print_learned,
    print_planted,
    repair_config,
    run_demo,
)
from grse_graph.training.report import library_skills
from grse_graph.training.review import ReviewAnswer, ReviewRequest
from grse_graph.training.run_export import export_run_pack
from grse_graph.training.run_folder import RunFolder, default_run_dir
from grse_graph.training.runner import TrainResult, run_training
from grse_graph.training.session import (
    Endpoints,
    check_training_splits,
    load_training_task,
    open_endpoints,
    session_deps,
    usage_kept_on_failure,
    write_run_usage,
)
from grse_graph.training.terminal import LiveProgress, ProgressTracker, TerminalReviewer

ROLE_SECTIONS = frozenset({"actor", "critic", "optimizer", "engine"})


def _read_train_toml(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found") from None
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: invalid TOML: {error}") from None
    # The grse TOML: a [train] table beside the model roles' tables (a file of bare training
    # keys, as written before the two were one file, still reads as the train table).
    if "train" in document:
        table = document["train"]
    else:
        table = {k: v for k, v in document.items() if k not in ROLE_SECTIONS}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [train] must be a table")
    return table


def build_train_config(
    base: dict[str, Any],
    flags: dict[str, Any],
    origin: str,
    *,
    training_top_k: int,
) -> TrainConfig:
    """TOML values overridden by the flags that were given (None means not given), over the
    task's protocol values (`protocol_train_config`, with the actor family's top-k). A setting
    the chosen method does not read is refused, naming the flag or the TOML key to remove."""
    given = {k: v for k, v in flags.items() if v is not None}

    def removal(setting: str) -> str:
        if setting in given:
            return f"remove {setting_flag(setting)}"
        return f"remove {setting} from [train] in {origin}"

    return protocol_train_config(
        {**base, **given}, origin, training_top_k=training_top_k, removal=removal
    )


def probe_section(
    base: dict[str, Any],
    on: bool,
    questions: int | None,
    budget: int | None,
    confidence: float | None,
) -> dict[str, Any] | None:
    """The `probe` section the flags give (None: the TOML's, or off); `--probe-questions`,
    `--probe-budget` and `--probe-confidence` need probe credit on, from `--probe-credit` or
    the TOML."""
    section = base.get("probe")
    given = {"questions": questions, "budget": budget, "confidence": confidence}
    chosen = {k: v for k, v in given.items() if v is not None}
    if chosen and not (on or section):
        raise ConfigError(
            "--probe-questions/--probe-budget/--probe-confidence: only with --probe-credit"
        )
    if not on and not chosen:
        return None
    return {**(section or {}), **chosen}


def _method_flag(base: dict[str, Any], method: str | None) -> str | None:
    """The `--method` value to merge over the TOML table: None when not given or when it names
    the method whose section the TOML already holds (the section's knobs are kept)."""
    section = base.get("method")
    if method is None or (isinstance(section, dict) and section.get("name", "grse") == method):
        return None
    return method


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


def _llm_config(config: Path | None, model: str | None) -> LLMConfig:
    return load_config(config, overrides={"engine.model": model})


def _tokens(endpoints: Endpoints) -> int:
    total = endpoints.ledger.report().total
    return total.prompt_tokens + total.completion_tokens


def _train(
    config: TrainConfig,
    llm: LLMConfig,
    run: RunFolder,
    *,
    resume: bool,
    console: Console,
    task: Task,
    checkpointer: CheckpointerSpec | None = None,
) -> tuple[TrainResult, dict[str, Any]]:
    terminal = TerminalReviewer(console)
    with open_endpoints(llm, engine_log=run.path / "engine.log") as endpoints:
        tracker = ProgressTracker(config.iterations, tokens=lambda: _tokens(endpoints))
        with LiveProgress(tracker, console) as live:

            def reviewer(request: ReviewRequest) -> ReviewAnswer:
                with live.paused():
                    return terminal(request)

            deps = session_deps(config, run, endpoints, task=task, on_progress=live)
            with usage_kept_on_failure(deps):
                result = asyncio.run(
                    run_training(
                        deps,
                        resume=resume,
                        reviewer=reviewer if config.review else None,
                        checkpointer=checkpointer,
                    )
                )
            write_run_usage(deps)
        usage = endpoints.ledger.report().model_dump(mode="json")
    return result, usage


def print_usage(console: Console, usage: dict[str, Any]) -> None:
    """Per-role tokens and model time as a table."""
    table = Table(title="tokens and time per role")
    for column in ("role", "calls", "prompt", "cached", "completion", "model time (s)"):
        table.add_column(column, justify="right" if column != "role" else "left")
    roles = usage.get("roles", {})
    total = usage.get("total", {})
    reported = total.get("cached_prompt_tokens", 0)
    # The total's cached count falls back to the engine log's when no server reported one.
    cached_total = usage.get("cached_prompt_tokens", reported)
    for name, r in [*sorted(roles.items()), ("total", total)]:
        cached = cached_total if name == "total" else r.get("cached_prompt_tokens", 0)
        table.add_row(
            name,
            str(r.get("calls", 0)),
            str(r.get("prompt_tokens", 0)),
            str(cached),
            str(r.get("completion_tokens", 0)),
            f"{r.get('wall_time_s', 0.0):.1f}",
        )
    console.print(table)
    engine = usage.get("engine")
    if engine and not reported:
        console.print(
            "cached: the server reported no cached tokens per call; the "
            f"embedded engine's log counted {engine.get('reused_prompt_tokens', 0)} prompt "
            f"tokens served from its prefix cache and {engine.get('evaluated_prompt_tokens', 0)} "
            "computed",
            highlight=False,
        )
    reloads = engine.get("prefix_reloads", 0) if engine else 0
    if reloads:
        console.print(
            f"prefix slots: {reloads} chat requests found their agent's prefix evicted by "
            "another and computed it again; raise [engine] n_parallel above the number of "
            "agent prefixes a question cycles through",
            highlight=False,
        )


def skipped_operators(run: RunFolder, iteration: int) -> list[str]:
    """One line per operator attempt of `iteration` that left its library unchanged, with the
    reason (a drafted skill rejected by the memorisation check, an unusable optimizer reply)."""
    return [
        f"{line.record.operator} for {line.record.agent}"
        + (f" ({', '.join(line.record.skills)})" if line.record.skills else "")
        + f": {line.record.skipped_reason}"
        for line in run.operators.read()
        if line.iteration == iteration and not line.record.changed and line.record.skipped_reason
    ]


def print_gates(console: Console, run: RunFolder, result: TrainResult) -> None:
    """Each iteration's gate: base score, and per proposed library its skills, score and verdict;
    without a candidate, why each operator attempt left its library unchanged."""
    proposed = {c.iteration: c.candidates for c in run.candidates.read()}
    for gate in result.gates:
        console.print(f"iteration {gate.iteration}: validation base {gate.base_score:.3f}")
        if not gate.decisions:
            skipped = skipped_operators(run, gate.iteration)
            console.print(
                "  no candidate library"
                + ("" if skipped else " (nothing to edit from this batch's evidence)")
            )
            for line in skipped:
                console.print(f"    {line}", highlight=False, markup=False)
        for d in gate.decisions:
            relative = proposed.get(gate.iteration, {}).get(d.agent)
            names = (
                ", ".join(s.name for s in library_skills(run.path / relative)) if relative else "?"
            )
            verdict = (
                "accepted" if d.accepted else f"rejected (needs >= {d.base_score - d.delta:.3f})"
            )
            console.print(
                f"  {d.agent}: candidate [{names}] scored {d.candidate_score:.3f}: {verdict}",
                highlight=False,
                markup=False,
            )


# -- `grse train --help`: options grouped by the methods that read them --------------------------

EVERY_METHOD = "Every method"


def _panel(readers: Sequence[MethodClass]) -> str:
    if len(readers) == len(BUILTIN_METHODS):
        return EVERY_METHOD
    return " and ".join(cls.title for cls in readers) + " only"


def setting_panel(setting: str) -> str:
    """The help panel of a `TrainConfig` setting's flag: the built-in methods that read it
    (from their `ignored_settings`, so the help and the refusal agree)."""
    return _panel([c for c in BUILTIN_METHODS.values() if setting not in c.ignored_settings])


def section_panel(field: str) -> str:
    """The help panel of a method-section flag: the built-in methods whose settings have it."""
    return _panel([c for c in BUILTIN_METHODS.values() if field in c.settings_type.model_fields])


FLAG_OF_SETTING = {
    "first_agent_n": "--no-first-agent-n",
    "probe": "--probe-credit/--probe-questions/--probe-budget/--probe-confidence",
}
"""The flags of the settings whose flag is not `--<setting>` (with - for _)."""


def setting_flag(setting: str) -> str:
    """The `grse train` flag that sets `setting`."""
    return FLAG_OF_SETTING.get(setting, "--" + setting.replace("_", "-"))


def setting_option(setting: str, help_text: str, *flags: str) -> Any:
    """A `grse train` option that sets a `TrainConfig` setting, in its methods' help panel."""
    return typer.Option(*flags, help=help_text, rich_help_panel=setting_panel(setting))


def section_option(field: str, help_text: str, *flags: str) -> Any:
    """A `grse train` option that sets a method-section field, in its methods' help panel."""
    return typer.Option(*flags, help=help_text, rich_help_panel=section_panel(field))


def every_method_option(help_text: str, *flags: str) -> Any:
    """A `grse train` option that every method reads."""
    return typer.Option(*flags, help=help_text, rich_help_panel=EVERY_METHOD)


TaskOpt = Annotated[str | None, every_method_option("task name (demo, hotpotqa, locomo, jsonl)")]
DataOpt = Annotated[str | None, every_method_option("path to the task's data")]
MethodOpt = Annotated[
    str | None,
    every_method_option(f"credit method: {' | '.join(METHOD_NAMES)} (default grse)"),
]
TopologyOpt = Annotated[
    str | None,
    every_method_option(f"team topology: {' | '.join(TOPOLOGY_NAMES)} (default sequential)"),
]
ToolProtocolOpt = Annotated[
    str | None,
    every_method_option(
        "how the agents call their tools: function (default) | text (the paper's "
        "<grep>pattern</grep> calls parsed by the environment; the default with --paper-mode)",
        "--tool-protocol",
    ),
]
CategoryOpt = Annotated[
    str | None, every_method_option("train on one question category (e.g. LoCoMo's)")
]
IterationsOpt = Annotated[int | None, setting_option("iterations", "T (default 5)")]
BatchSizeOpt = Annotated[int | None, setting_option("batch_size", "questions per iteration (24)")]
ValidationSizeOpt = Annotated[
    int | None,
    setting_option("validation_size", "|V| (all; SkillMAS: only with checkpoint = validation)"),
]
ValidationRepeatsOpt = Annotated[
    int | None,
    setting_option(
        "validation_repeats", "H per question (1; SkillMAS: only with checkpoint = validation)"
    ),
]
LibraryLimitOpt = Annotated[int | None, setting_option("library_limit", "L skills per agent (4)")]
ConcurrencyOpt = Annotated[int | None, setting_option("concurrency", "parallel units (4)")]
SeedOpt = Annotated[int | None, setting_option("seed", "base seed (0)")]
SkillModeOpt = Annotated[
    str | None,
    setting_option(
        "skill_mode",
        "inline (default) | tool | path: how agents see their skills (path: "
        "read_file on /skills/NAME/SKILL.md, as a shipped pack)",
        "--skill-mode",
    ),
]
InitLibraryOpt = Annotated[
    list[str] | None,
    setting_option(
        "init_libraries",
        "AGENT=DIR: start this agent from a library (repeatable)",
        "--init-library",
    ),
]
InitPackOpt = Annotated[
    Path | None,
    setting_option(
        "init_libraries", "start the pack's agents from their libraries in this pack", "--init-pack"
    ),
]
DeltaOpt = Annotated[float | None, setting_option("delta", "gate tolerance (0.02)")]
ReviewOpt = Annotated[bool, setting_option("review", "review each skill edit", "--review")]
ProbeCreditOpt = Annotated[
    bool,
    setting_option(
        "probe",
        "measure each skill's effect by execution every iteration (greedy, "
        "skills masked) and use it as credit beside the critic's (off: the paper's)",
        "--probe-credit",
    ),
]
ProbeQuestionsOpt = Annotated[
    int | None, setting_option("probe", "with --probe-credit: training questions probed (8)")
]
ProbeBudgetOpt = Annotated[
    int | None, setting_option("probe", "with --probe-credit: team runs per probe (120)")
]
ProbeConfidenceOpt = Annotated[
    float | None,
    setting_option(
        "probe",
        "with --probe-credit: the level of the interval that must exclude 0 before a measured "
        "effect overrides the critic (0.95)",
    ),
]
GroupSizeOpt = Annotated[int | None, section_option("group_size", "G rollouts per question (4)")]
NoStructureOpt = Annotated[bool, section_option("structured", "w/o structure", "--no-structure")]
DapoFilterOpt = Annotated[bool, section_option("dapo_filter", "drop equal groups", "--dapo-filter")]
WithLabelsOpt = Annotated[
    bool, section_option("with_labels", "critic sees categories", "--with-labels")
]
NoFirstAgentNOpt = Annotated[
    bool,
    setting_option(
        "first_agent_n", "one first-agent call per rollout, not n=G", "--no-first-agent-n"
    ),
]
PaperModeOpt = Annotated[
    bool,
    every_method_option(
        "the paper's method only: the project's additions off (memorisation check, "
        "GRSE's output contrast and tool-error rule)",
        "--paper-mode",
    ),
]
OutOpt = Annotated[Path | None, typer.Option(help="run folder (default runs/<task>-<time>)")]
ResumeOpt = Annotated[Path | None, typer.Option(help="continue the run in this folder")]
ExportOpt = Annotated[
    Path | None,
    typer.Option("--export", help="after training, write the final libraries as a pack here"),
]
BookkeepingOpt = Annotated[
    bool,
    typer.Option(
        "--bookkeeping/--no-bookkeeping",
        help="keep the grse-* training metadata in the --export pack",
    ),
]
ModelOpt = Annotated[str | None, typer.Option(help="embedded model: small|default|PATH")]
CheckpointerOpt = Annotated[
    str | None,
    typer.Option(
        help="sqlite (RUN/checkpoints.sqlite, the default) or a "
        "postgres://USER@HOST:PORT/DB DSN (the postgres extra); a resume uses the run's "
        "own unless given"
    ),
]


# -- grse train ----------------------------------------------------------------------------------


def _resumed_run(
    resume: Path, method: str | None, review: bool, init_pack: Path | None
) -> tuple[RunFolder, TrainConfig]:
    """The run folder to continue and its stored config (`--review` may be switched on)."""
    if init_pack is not None:
        raise ConfigError(
            f"--init-pack {init_pack}: a resumed run keeps the libraries it started from"
        )
    run = RunFolder(resume)
    stored = run.read_config()
    if method is not None and method != stored.method.name:
        raise ConfigError(f"--method {method}: {run.path} was trained with {stored.method.name}")
    train_config = stored.model_copy(update={"review": review or stored.review})
    # Only what this session's flags change is checked: the stored settings are the run's.
    refuse_unread_settings(
        train_config, lambda s: f"remove {setting_flag(s)}", among=("review",) if review else ()
    )
    return run, train_config


def _new_run_config(
    config: Path | None,
    model: str | None,
    flags: dict[str, Any],
    probe: tuple[bool, int | None, int | None, float | None],
) -> TrainConfig:
    """The TOML's [train] table overridden by the flags given, over the task's protocol values.
    `flags["method"]` is the `--method` value; `probe` is (--probe-credit, --probe-questions,
    --probe-budget, --probe-confidence)."""
    base = _read_train_toml(config) if config is not None else {}
    flags = {
        **flags,
        "method": _method_flag(base, flags["method"]),
        "probe": probe_section(base, *probe),
    }
    if "task" not in base and flags["task"] is None:
        raise ConfigError("grse train: --task is required (or task in --config)")
    # The task's protocol values (batch, L, top-k of the actor's family, training and
    # validation decoding) fill what neither the TOML nor the flags give.
    top_k = _llm_config(config, model).training_top_k()
    train_config = build_train_config(base, flags, str(config or "flags"), training_top_k=top_k)
    method_class(train_config.method.name)
    return train_config


def _with_starting_libraries(
    train_config: TrainConfig, task: Task, init_library: list[str] | None, init_pack: Path | None
) -> TrainConfig:
    """The config with the folders the run starts from, checked against the task's team."""
    # `--init-library` flags replace the TOML's table, as every flag does.
    libraries = (
        init_library_folders(init_library) if init_library else dict(train_config.init_libraries)
    )
    if not libraries and init_pack is None:
        return train_config
    team = default_team(task, skill_mode=train_config.skill_mode, topology=train_config.topology)
    folders = starting_folders(libraries, init_pack, team.agent_names)
    return train_config.model_copy(update={"init_libraries": folders})


def _print_outcome(
    console: Console,
    run: RunFolder,
    result: TrainResult,
    usage: dict[str, Any],
    *,
    export: Path | None,
    bookkeeping: bool,
    as_json: bool,
    started: float,
) -> None:
    """Gates, usage, report path, the exported pack, and with --json the result document."""
    print_gates(console, run, result)
    print_usage(console, usage)
    console.print(f"report: {run.report_path}")
    pack = None
    if export is not None:
        pack = export_run_pack(run.path, None, export, bookkeeping=bookkeeping)
        console.print(f"pack: {pack}")
    console.print(f"run folder: {run.path}  ({time.perf_counter() - started:.0f} s)")
    if as_json:
        document = {
            "result": result.model_dump(mode="json"),
            "usage": usage,
            "report": str(run.report_path),
        }
        print_json({**document, "pack": str(pack)} if pack is not None else document)


def train(
    task: TaskOpt = None,
    data: DataOpt = None,
    method: MethodOpt = None,
    topology: TopologyOpt = None,
    tool_protocol: ToolProtocolOpt = None,
    category: CategoryOpt = None,
    iterations: IterationsOpt = None,
    batch_size: BatchSizeOpt = None,
    validation_size: ValidationSizeOpt = None,
    validation_repeats: ValidationRepeatsOpt = None,
    library_limit: LibraryLimitOpt = None,
    concurrency: ConcurrencyOpt = None,
    seed: SeedOpt = None,
    skill_mode: SkillModeOpt = None,
    init_library: InitLibraryOpt = None,
    init_pack: InitPackOpt = None,
    delta: DeltaOpt = None,
    review: ReviewOpt = False,
    probe_credit: ProbeCreditOpt = False,
    probe_questions: ProbeQuestionsOpt = None,
    probe_budget: ProbeBudgetOpt = None,
    probe_confidence: ProbeConfidenceOpt = None,
    group_size: GroupSizeOpt = None,
    no_structure: NoStructureOpt = False,
    dapo_filter: DapoFilterOpt = False,
    with_labels: WithLabelsOpt = False,
    no_first_agent_n: NoFirstAgentNOpt = False,
    paper_mode: PaperModeOpt = False,
    out: OutOpt = None,
    resume: ResumeOpt = None,
    export: ExportOpt = None,
    bookkeeping: BookkeepingOpt = True,
    config: ConfigOption = None,
    model: ModelOpt = None,
    checkpointer: CheckpointerOpt = None,
    as_json: JsonOption = False,
) -> None:
    """Train skill libraries with a credit method (GRSE by default); resumable (--resume RUN)
    and reviewable (--review)."""
    console = report_console(as_json)
    if method is not None:
        method_class(method)  # an unknown name fails here, naming the known ones
    if not bookkeeping and export is None:
        raise ConfigError("--no-bookkeeping: only with --export PACK")
    if export is not None:
        # Refused before training, not after it: an unwritable pack must not cost a run.
        check_pack_destination(export)
    # The task is read before the engine starts: a wrong task name, data path or category, or a
    # split the run needs and the data lacks, costs one line, not an engine start.
    if resume is not None:
        run, train_config = _resumed_run(resume, method, review, init_pack)
        task_loaded = load_training_task(train_config)
    else:
        flags = {
            "task": task,
            "data": data,
            "category": category,
            "topology": topology,
            "tool_protocol": tool_protocol,
            "method": method,
            "iterations": iterations,
            "group_size": group_size,
            "batch_size": batch_size,
            "validation_size": validation_size,
            "validation_repeats": validation_repeats,
            "library_limit": library_limit,
            "delta": delta,
            "concurrency": concurrency,
            "seed": seed,
            "review": review or None,
            "structured": False if no_structure else None,
            "dapo_filter": dapo_filter or None,
            "with_labels": with_labels or None,
            "first_agent_n": False if no_first_agent_n else None,
            "paper_mode": paper_mode or None,
            "skill_mode": skill_mode,
            "probe": None,
        }
        probe = (probe_credit, probe_questions, probe_budget, probe_confidence)
        train_config = _new_run_config(config, model, flags, probe)
        task_loaded = load_training_task(train_config)
        train_config = _with_starting_libraries(train_config, task_loaded, init_library, init_pack)
        run = RunFolder(out or default_run_dir(train_config.task))
    check_training_splits(task_loaded, train_config)
    started = time.perf_counter()
    result, usage = _train(
        train_config,
        _llm_config(config, model),
        run,
        resume=resume is not None,
        console=console,
        checkpointer=CheckpointerSpec.parse(checkpointer) if checkpointer else None,
        task=task_loaded,
    )
    _print_outcome(
        console,
        run,
        result,
        usage,
        export=export,
        bookkeeping=bookkeeping,
        as_json=as_json,
        started=started,
    )


# -- grse demo -----------------------------------------------------------------------------------


def _demo_config(
    planted: PlantedLibrary | None,
    *,
    probe: bool,
    iterations: int,
    batch_size: int,
    test_limit: int | None,
    tool_protocol: str | None = None,
) -> tuple[TrainConfig, int]:
    """The demo's config and its test limit: learning from empty libraries (first
    DEMO_TEST_LIMIT test questions by default), or repairing the planted one (all).
    `tool_protocol` None keeps the config's default (function calling)."""
    changes: dict[str, Any] = {
        "iterations": iterations,
        "batch_size": batch_size,
        "tool_protocol": tool_protocol,
    }
    if planted is None:
        config = learning_config(**changes)
        return config, DEMO_TEST_LIMIT if test_limit is None else test_limit
    config = repair_config(planted, probe=probe, **changes)
    return config, 0 if test_limit is None else test_limit


def _print_demo_result(
    console: Console,
    run: RunFolder,
    result: DemoResult,
    usage: dict[str, Any],
    *,
    planted: bool,
    probe: bool,
    started: float,
) -> None:
    """Gates, the planted or learned skills, the comparison, scores, usage and timings."""
    print_gates(console, run, result.training)
    if planted:
        print_planted(console, result.planted, probe=probe)
    else:
        print_learned(console, result.learned)
    print_comparison(console, result.comparison)
    print_scores(console, result, "planted" if planted else "empty")
    print_usage(console, usage)
    console.print(
        f"training {result.training_s:.0f} s, test {result.test_s:.0f} s, "
        f"total {time.perf_counter() - started:.0f} s"
    )
    console.print(f"run folder: {run.path}  (report: {run.report_path})")


def demo(
    model: Annotated[str, typer.Option(help="embedded model: small|default|PATH")] = "default",
    out: Annotated[Path | None, typer.Option(help="run folder")] = None,
    iterations: Annotated[int, typer.Option(help="training iterations")] = 1,
    batch_size: Annotated[int, typer.Option(help="training questions")] = DEMO_SETTINGS[
        "batch_size"
    ],
    test_limit: Annotated[
        int | None,
        typer.Option(
            min=0,
            help="first N test questions (both kinds mixed; 0: all; default all 24, "
            f"{DEMO_TEST_LIMIT} with --from-empty)",
        ),
    ] = None,
    from_empty: Annotated[
        bool,
        typer.Option(
            "--from-empty",
            help="learn from empty libraries instead of repairing the planted one (needs a "
            "capable [critic]/[optimizer] endpoint to learn anything, see the README)",
        ),
    ] = False,
    probe: Annotated[
        bool,
        typer.Option(
            "--probe/--no-probe",
            help="repair with probe credit (each skill's effect measured by execution) "
            "beside the critic's; --no-probe: the paper's GRSE alone",
        ),
    ] = True,
    critic_model: Annotated[
        str | None,
        typer.Option(help="embedded model of the critic (default: the demo's choice)"),
    ] = None,
    optimizer_model: Annotated[
        str | None,
        typer.Option(help="embedded model of the optimizer (default: the demo's choice)"),
    ] = None,
    tool_protocol: Annotated[
        str | None,
        typer.Option(
            "--tool-protocol",
            help="how the retriever calls grep: function (default) or text (the paper's "
            "<grep>pattern</grep> calls parsed by the environment)",
        ),
    ] = None,
) -> None:
    """The main job: repair the demo task's planted library with GRSE (probe credit on) on
    the embedded engine, then compare the planted and the repaired libraries on the demo
    test split (greedy). --from-empty: learn from empty libraries instead."""
    console = output_console()
    started = time.perf_counter()
    planted = None if from_empty else demo_planted()
    config, limit = _demo_config(
        planted,
        probe=probe,
        iterations=iterations,
        batch_size=batch_size,
        test_limit=test_limit,
        tool_protocol=tool_protocol,
    )
    run = RunFolder(out or default_run_dir("demo"))
    llm = load_config(
        overrides=demo_llm_overrides(
            model, critic_model=critic_model, optimizer_model=optimizer_model
        )
    )
    console.print(demo_intro(config, planted), highlight=False)
    with open_endpoints(llm, engine_log=run.path / "engine.log") as endpoints:
        for role in ("actor", "critic", "optimizer"):
            console.print(f"{role}: {llm.embedded_model(role)} at {endpoints.roles.base_url(role)}")
        tracker = ProgressTracker(config.iterations, tokens=lambda: _tokens(endpoints))
        live = LiveProgress(tracker, console)
        deps = session_deps(config, run, endpoints, on_progress=live)
        result = asyncio.run(
            run_demo(
                config,
                deps,
                test_limit=limit or None,
                console=console,
                display=live,
                planted=planted,
            )
        )
        usage = endpoints.ledger.report().model_dump(mode="json")
    run.write_usage(usage)
    probed = config.probe is not None
    _print_demo_result(
        console, run, result, usage, planted=planted is not None, probe=probed, started=started
    )


def register(app: typer.Typer) -> None:
    """Register `grse train` (its --help grouped by the methods that read each option) and
    `grse demo`."""
    app.command("train", cls=PanelledCommand)(train)
    app.command("demo")(demo)


def demo_intro(config: TrainConfig, planted: PlantedLibrary | None) -> str:
    """What the demo is about to do, in one paragraph (`planted` None: from empty libraries)."""
    if planted is None:
        return (
            "grse demo --from-empty: GRSE learns skills for an empty team. The embedded 0.5B "
            "critic and optimizer rarely write a skill that helps; point [critic]/[optimizer] "
            "at a capable endpoint to learn from empty libraries."
        )
    probe = config.probe
    credit = (
        f"probe credit on: every skill's effect is measured by execution on {probe.questions} "
        f"training questions ({probe.design}, at most {probe.budget} team runs) and used "
        f"beside the critic's credit; a skill whose {probe.confidence:.0%} interval lies below "
        "0 becomes a prune target, and the validation gate must accept every prune"
        if probe is not None
        else "critic credit only (the paper's GRSE)"
    )
    return (
        f"grse demo: GRSE repairs a planted library: {planted.composition()} (which is which "
        f"is hidden from the critic and optimizer); {credit}."
    )


def print_scores(console: Console, result: DemoResult, start_label: str) -> None:
    """The starting and trained libraries' test scores side by side."""
    table = Table(title="demo test split, greedy decoding")
    metrics = list(result.start.overall.metrics)
    for column in ("library", "questions", "failed", "reward", *metrics):
        table.add_column(column)
    for label, summary in ((start_label, result.start), ("trained", result.final)):
        table.add_row(
            label,
            str(summary.questions),
            str(summary.failed),
            f"{summary.overall.reward:.3f}",
            *(f"{summary.overall.metrics.get(m, 0.0):.3f}" for m in metrics),
        )
    console.print(table)


__all__ = ["build_train_config", "register"]
