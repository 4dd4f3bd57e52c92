"""`grse train` (training with any registered credit method, resumable, reviewable) and
`grse demo` (the main job)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from grse_graph.checkpointing import CheckpointerSpec
from grse_graph.cli.option_groups import typer_command
from grse_graph.cli.options import JsonOption, PanelledCommand, print_json, report_console
from grse_graph.cli.train_options import given
from grse_graph.cli.train_setup import TrainOptions
from grse_graph.llm import LLMConfig, load_config
from grse_graph.output import output_console
from grse_graph.probes import ProbeSettings
from grse_graph.probes.design import MIN_PROBE_QUESTIONS
from grse_graph.tasks.base import Task
from grse_graph.tasks.planted import PlantedLibrary, demo_planted
from grse_graph.training.config import TrainConfig
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
from grse_graph.training.provenance import library_skills
from grse_graph.training.review import ReviewAnswer, ReviewRequest
from grse_graph.training.run_export import export_run_pack
from grse_graph.training.run_folder import RunFolder, default_run_dir
from grse_graph.training.runner import TrainResult, run_training
from grse_graph.training.session import (
    Endpoints,
    open_endpoints,
    session_deps,
    usage_kept_on_failure,
    write_run_usage,
)
from grse_graph.training.terminal import LiveProgress, ProgressTracker, TerminalReviewer


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


# -- grse train ----------------------------------------------------------------------------------


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


def train(options: TrainOptions, as_json: JsonOption = False) -> None:
    """Train skill libraries with a credit method (GRSE by default); resumable (--resume RUN)
    and reviewable (--review)."""
    console = report_console(as_json)
    prepared = options.prepare()
    started = time.perf_counter()
    result, usage = _train(
        prepared.config,
        options.engine.llm_config(),
        prepared.run,
        resume=prepared.resumed,
        console=console,
        checkpointer=options.engine.checkpointer_spec(),
        task=prepared.task,
    )
    _print_outcome(
        console,
        prepared.run,
        result,
        usage,
        export=options.output.export,
        bookkeeping=options.output.bookkeeping,
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
    probe_sizes: dict[str, int] | None = None,
) -> tuple[TrainConfig, int]:
    """The demo's config and its test limit: learning from empty libraries (first
    DEMO_TEST_LIMIT test questions by default), or repairing the planted one (all).
    `tool_protocol` None keeps the config's default (function calling); `probe_sizes`
    (`questions`, `budget`) shrink the repair's probe."""
    changes: dict[str, Any] = {
        "iterations": iterations,
        "batch_size": batch_size,
        "tool_protocol": tool_protocol,
    }
    if probe_sizes and (planted is None or not probe):
        raise typer.BadParameter("--probe-questions and --probe-budget size the repair's probe")
    if planted is None:
        config = learning_config(**changes)
        return config, DEMO_TEST_LIMIT if test_limit is None else test_limit
    config = repair_config(planted, probe=probe, **changes)
    if probe_sizes and config.probe is not None:
        sized = ProbeSettings.model_validate({**config.probe.model_dump(), **probe_sizes})
        config = config.model_copy(update={"probe": sized})
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
    probe_questions: Annotated[
        int | None,
        typer.Option(
            min=MIN_PROBE_QUESTIONS,
            help="training questions the probe measures on (default: all 24)",
        ),
    ] = None,
    probe_budget: Annotated[
        int | None,
        typer.Option(min=2, help="team runs the probe may make (default: 120)"),
    ] = None,
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
        probe_sizes=given(questions=probe_questions, budget=probe_budget),
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
    """Register `grse train` (its flags parsed into the `TrainOptions` groups, its --help
    grouped by the methods that read each option) and `grse demo`."""
    app.command("train", cls=PanelledCommand)(typer_command(train))
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
