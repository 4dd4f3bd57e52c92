"""`grse train` (training with any registered credit method, resumable, reviewable) and
`grse demo` (the main job)."""

from __future__ import annotations

import asyncio
import contextlib
import time
import tomllib
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from grse_graph.checkpointing import CheckpointerSpec
from grse_graph.cli.eval_cmd import parse_library_option
from grse_graph.cli.options import ConfigOption, JsonOption, print_json, report_console
from grse_graph.errors import ConfigError
from grse_graph.llm import LLMConfig, load_config
from grse_graph.methods.registry import METHOD_NAMES, method_class
from grse_graph.skills import PACK_SKILLS_DIR, check_pack_destination, export_run_pack, import_pack
from grse_graph.tasks.base import Task
from grse_graph.tasks.planted import demo_planted
from grse_graph.tasks.protocol import with_protocol_defaults
from grse_graph.team import default_team
from grse_graph.team.topology import TOPOLOGY_NAMES
from grse_graph.training.config import TrainConfig
from grse_graph.training.context import TrainingDeps
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
from grse_graph.training.run_folder import RunFolder
from grse_graph.training.runner import TrainResult, run_training
from grse_graph.training.session import (
    Endpoints,
    load_training_task,
    open_endpoints,
    session_deps,
)
from grse_graph.training.terminal import LiveProgress, ProgressTracker, TerminalReviewer
from grse_graph.validation_text import describe_validation_error

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


def build_train_config(base: dict[str, Any], flags: dict[str, Any], origin: str) -> TrainConfig:
    """TOML values overridden by the flags that were given (None means not given)."""
    merged = {**base, **{k: v for k, v in flags.items() if v is not None}}
    try:
        return TrainConfig.model_validate(merged)
    except ValidationError as error:
        raise ConfigError(f"{origin}: {describe_validation_error(error)}") from None


def probe_section(
    base: dict[str, Any], on: bool, questions: int | None, budget: int | None
) -> dict[str, Any] | None:
    """The `probe` section the flags give (None: the TOML's, or off); `--probe-questions` and
    `--probe-budget` need probe credit on, from `--probe-credit` or the TOML."""
    section = base.get("probe")
    if (questions is not None or budget is not None) and not (on or section):
        raise ConfigError("--probe-questions/--probe-budget: only with --probe-credit")
    if not on and questions is None and budget is None:
        return None
    given = {"questions": questions, "budget": budget}
    return {**(section or {}), **{k: v for k, v in given.items() if v is not None}}


def _method_flag(base: dict[str, Any], method: str | None) -> str | None:
    """The `--method` value to merge over the TOML table: None when not given or when it names
    the method whose section the TOML already holds (the section's knobs are kept)."""
    section = base.get("method")
    if method is None or (isinstance(section, dict) and section.get("name", "grse") == method):
        return None
    return method


def init_library_folders(values: list[str]) -> dict[str, str]:
    """`--init-library AGENT=DIR` options -> agent: absolute folder (checked, one per agent)."""
    folders: dict[str, str] = {}
    for value in values:
        agent, folder = parse_library_option(value)
        if agent in folders:
            raise ConfigError(f"--init-library {value!r}: agent {agent!r} is given twice")
        if not folder.is_dir():
            raise ConfigError(f"--init-library {value!r}: {folder} is not a folder")
        folders[agent] = str(folder.resolve())
    return folders


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


def _default_run_dir(task: str) -> Path:
    return Path("runs") / f"{task}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def _train(
    config: TrainConfig,
    llm: LLMConfig,
    run: RunFolder,
    *,
    resume: bool,
    console: Console,
    checkpointer: CheckpointerSpec | None = None,
    task: Task | None = None,
) -> tuple[TrainResult, dict[str, Any]]:
    terminal = TerminalReviewer(console)
    with open_endpoints(llm, engine_log=run.path / "engine.log") as endpoints:
        tracker = ProgressTracker(config.iterations, tokens=lambda: _tokens(endpoints))
        with LiveProgress(tracker, console) as live:

            def reviewer(request: ReviewRequest) -> ReviewAnswer:
                with live.paused():
                    return terminal(request)

            deps = session_deps(config, run, endpoints, task=task, on_progress=live)
            try:
                result = asyncio.run(
                    run_training(
                        deps,
                        resume=resume,
                        reviewer=reviewer if config.review else None,
                        checkpointer=checkpointer,
                    )
                )
            except BaseException:
                # Also a run that stops on an error keeps its usage (the retries and failures
                # that explain the stop); the run's own error stays the one reported.
                with contextlib.suppress(OSError):
                    _write_run_usage(run, deps)
                raise
            _write_run_usage(run, deps)
        usage = endpoints.ledger.report().model_dump(mode="json")
    return result, usage


def _write_run_usage(run: RunFolder, deps: TrainingDeps) -> None:
    """usage.json: this session added to the earlier sessions of the run (`deps.usage`)."""
    if deps.usage is not None:
        run.write_usage(deps.usage())


def print_usage(console: Console, usage: dict[str, Any]) -> None:
    """Per-role tokens and model time as a table."""
    table = Table(title="tokens and time per role")
    for column in ("role", "calls", "prompt", "cached", "completion", "model time (s)"):
        table.add_column(column, justify="right" if column != "role" else "left")
    roles = usage.get("roles", {})
    for name, r in [*sorted(roles.items()), ("total", usage.get("total", {}))]:
        table.add_row(
            name,
            str(r.get("calls", 0)),
            str(r.get("prompt_tokens", 0)),
            str(r.get("cached_prompt_tokens", 0)),
            str(r.get("completion_tokens", 0)),
            f"{r.get('wall_time_s', 0.0):.1f}",
        )
    console.print(table)


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


def register(app: typer.Typer) -> None:
    """Register `grse train` and `grse demo`."""

    @app.command("train")
    def train(
        task: Annotated[
            str | None, typer.Option(help="task name (demo, hotpotqa, locomo, jsonl)")
        ] = None,
        data: Annotated[str | None, typer.Option(help="path to the task's data")] = None,
        method: Annotated[
            str | None,
            typer.Option(help=f"credit method: {' | '.join(METHOD_NAMES)} (default grse)"),
        ] = None,
        topology: Annotated[
            str | None,
            typer.Option(help=f"team topology: {' | '.join(TOPOLOGY_NAMES)} (default sequential)"),
        ] = None,
        category: Annotated[
            str | None, typer.Option(help="train on one question category (e.g. LoCoMo's)")
        ] = None,
        iterations: Annotated[int | None, typer.Option(help="T (default 5)")] = None,
        group_size: Annotated[int | None, typer.Option(help="G rollouts per question (4)")] = None,
        batch_size: Annotated[int | None, typer.Option(help="questions per iteration (24)")] = None,
        validation_size: Annotated[int | None, typer.Option(help="|V| (all)")] = None,
        validation_repeats: Annotated[int | None, typer.Option(help="H per question (1)")] = None,
        library_limit: Annotated[int | None, typer.Option(help="L skills per agent (4)")] = None,
        delta: Annotated[float | None, typer.Option(help="gate tolerance (0.02)")] = None,
        concurrency: Annotated[int | None, typer.Option(help="parallel units (4)")] = None,
        seed: Annotated[int | None, typer.Option(help="base seed (0)")] = None,
        out: Annotated[
            Path | None, typer.Option(help="run folder (default runs/<task>-<time>)")
        ] = None,
        resume: Annotated[Path | None, typer.Option(help="continue the run in this folder")] = None,
        review: Annotated[bool, typer.Option("--review", help="review each skill edit")] = False,
        no_structure: Annotated[bool, typer.Option("--no-structure", help="w/o structure")] = False,
        dapo_filter: Annotated[
            bool, typer.Option("--dapo-filter", help="drop equal groups")
        ] = False,
        with_labels: Annotated[
            bool, typer.Option("--with-labels", help="critic sees categories")
        ] = False,
        no_first_agent_n: Annotated[
            bool,
            typer.Option("--no-first-agent-n", help="one first-agent call per rollout, not n=G"),
        ] = False,
        probe_credit: Annotated[
            bool,
            typer.Option(
                "--probe-credit",
                help="measure each skill's effect by execution every iteration (greedy, "
                "skills masked) and use it as credit beside the critic's (off: the paper's)",
            ),
        ] = False,
        probe_questions: Annotated[
            int | None, typer.Option(help="with --probe-credit: training questions probed (8)")
        ] = None,
        probe_budget: Annotated[
            int | None, typer.Option(help="with --probe-credit: team runs per probe (120)")
        ] = None,
        init_library: Annotated[
            list[str] | None,
            typer.Option(
                "--init-library", help="AGENT=DIR: start this agent from a library (repeatable)"
            ),
        ] = None,
        skill_mode: Annotated[
            str | None,
            typer.Option(
                "--skill-mode",
                help="inline (default) | tool | path: how agents see their skills (path: "
                "read_file on /skills/NAME/SKILL.md, as a shipped pack)",
            ),
        ] = None,
        init_pack: Annotated[
            Path | None,
            typer.Option(
                "--init-pack", help="start the pack's agents from their libraries in this pack"
            ),
        ] = None,
        export: Annotated[
            Path | None,
            typer.Option(
                "--export", help="after training, write the final libraries as a pack here"
            ),
        ] = None,
        bookkeeping: Annotated[
            bool,
            typer.Option(
                "--bookkeeping/--no-bookkeeping",
                help="keep the grse-* training metadata in the --export pack",
            ),
        ] = True,
        config: ConfigOption = None,
        model: Annotated[
            str | None, typer.Option(help="embedded model: small|default|PATH")
        ] = None,
        checkpointer: Annotated[
            str | None,
            typer.Option(
                help="sqlite (RUN/checkpoints.sqlite, the default) or a "
                "postgres://USER@HOST:PORT/DB DSN (the postgres extra); a resume uses the run's "
                "own unless given"
            ),
        ] = None,
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
        task_loaded: Task | None = None
        if resume is not None:
            if init_pack is not None:
                raise ConfigError(
                    f"--init-pack {init_pack}: a resumed run keeps the libraries it started from"
                )
            run = RunFolder(resume)
            stored = run.read_config()
            if method is not None and method != stored.method.name:
                raise ConfigError(
                    f"--method {method}: {run.path} was trained with {stored.method.name}"
                )
            train_config = stored.model_copy(update={"review": review or stored.review})
        else:
            base = _read_train_toml(config) if config is not None else {}
            flags = {
                "task": task,
                "data": data,
                "category": category,
                "topology": topology,
                "method": _method_flag(base, method),
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
                "skill_mode": skill_mode,
                "probe": probe_section(base, probe_credit, probe_questions, probe_budget),
            }
            if "task" not in base and task is None:
                raise ConfigError("grse train: --task is required (or task in --config)")
            # The task's protocol values (batch, L, top-k of the actor's family, validation
            # decoding) fill what neither the TOML nor the flags give.
            given = {k: v for k, v in flags.items() if v is not None}
            top_k = _llm_config(config, model).training_top_k()
            base = with_protocol_defaults({**base, **given}, training_top_k=top_k)
            train_config = build_train_config(base, flags, str(config or "flags"))
            method_class(train_config.method.name)
            # `--init-library` flags replace the TOML's table, as every flag does.
            libraries = (
                init_library_folders(init_library)
                if init_library
                else dict(train_config.init_libraries)
            )
            if libraries or init_pack is not None:
                task_loaded = load_training_task(train_config)
                team = default_team(
                    task_loaded,
                    skill_mode=train_config.skill_mode,
                    topology=train_config.topology,
                )
                folders = starting_folders(libraries, init_pack, team.agent_names)
                train_config = train_config.model_copy(update={"init_libraries": folders})
            run = RunFolder(out or _default_run_dir(train_config.task))
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

    @app.command("demo")
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
    ) -> None:
        """The main job: repair the demo task's planted library with GRSE (probe credit on) on
        the embedded engine, then compare the planted and the repaired libraries on the demo
        test split (greedy). --from-empty: learn from empty libraries instead."""
        console = Console()
        started = time.perf_counter()
        planted = None if from_empty else demo_planted()
        if planted is None:
            config = learning_config(iterations=iterations, batch_size=batch_size)
            limit = DEMO_TEST_LIMIT if test_limit is None else test_limit
        else:
            config = repair_config(
                planted, probe=probe, iterations=iterations, batch_size=batch_size
            )
            limit = 0 if test_limit is None else test_limit
        run = RunFolder(out or _default_run_dir("demo"))
        llm = load_config(
            overrides=demo_llm_overrides(
                model, critic_model=critic_model, optimizer_model=optimizer_model
            )
        )
        console.print(demo_intro(config, planted is not None), highlight=False)
        with open_endpoints(llm, engine_log=run.path / "engine.log") as endpoints:
            for role in ("actor", "critic", "optimizer"):
                console.print(
                    f"{role}: {llm.embedded_model(role)} at {endpoints.roles.base_url(role)}"
                )
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
        print_gates(console, run, result.training)
        if planted is not None:
            print_planted(console, result.planted, probe=config.probe is not None)
        else:
            print_learned(console, result.learned)
        print_comparison(console, result.comparison)
        print_scores(console, result, "planted" if planted is not None else "empty")
        print_usage(console, usage)
        console.print(
            f"training {result.training_s:.0f} s, test {result.test_s:.0f} s, "
            f"total {time.perf_counter() - started:.0f} s"
        )
        console.print(f"run folder: {run.path}  (report: {run.report_path})")


def demo_intro(config: TrainConfig, planted: bool) -> str:
    """What the demo is about to do, in one paragraph."""
    if not planted:
        return (
            "grse demo --from-empty: GRSE learns skills for an empty team. The embedded 0.5B "
            "critic and optimizer rarely write a skill that helps; point [critic]/[optimizer] "
            "at a capable endpoint to learn from empty libraries."
        )
    probe = config.probe
    credit = (
        f"probe credit on: every skill's effect is measured by execution on {probe.questions} "
        f"training questions ({probe.design}, at most {probe.budget} team runs) and used "
        "beside the critic's credit"
        if probe is not None
        else "critic credit only (the paper's GRSE)"
    )
    return (
        "grse demo: GRSE repairs a planted library: each agent starts with one helpful and two "
        f"harmful skills (which is which is hidden from the critic and optimizer); {credit}."
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
