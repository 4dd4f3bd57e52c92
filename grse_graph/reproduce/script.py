"""The one command line of every `evals/` script and of `grse reproduce TABLE`: plan the
table's runs, print them with their estimated cost (`--dry-run`), or make them (reusing the
finished, resuming the unfinished, `--jobs` at a time) and write `OUT/<table>.md`, its JSON and
its figures."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from grse_graph.errors import GrseError
from grse_graph.output import output_console

from . import cost as costs
from .context import TableContext, current_commit, load_actors
from .data import OFFICIAL, SMOKE_FIXTURES, load_fixtures, require_data, resolve_sources
from .manifest import Manifest, RunSpec, run_state, runs_at_other_commits, state_action
from .paper import load_paper
from .registry import TABLES
from .scheduler import execute_runs
from .settings import load_settings
from .table import write_table
from .tables.base import TableDef

TRAIN_SIZES = {
    "iterations": "training iterations (default Table 8's T = 5; a deviation, printed)",
    "batch-size": "training questions per iteration (a deviation, printed)",
    "validation-size": "the gate's validation questions (default the whole split)",
    "group-size": "G of the grouped methods (default Table 8's 4; not the G = 1 variant)",
}
"""Machine-sized training: loop sizes over Table 8's (or the smoke size)."""


def parser_for(table: TableDef) -> argparse.ArgumentParser:
    """The scripts' options; `--help` says what the table reproduces and what it costs."""
    parser = argparse.ArgumentParser(
        prog=table.script,
        description=f"Reproduces {table.reproduces}. Cost: {table.cost}.",
        epilog=(
            "Data: --data-hotpotqa PATH or $GRSE_HOTPOTQA (hotpot_dev_distractor_v1.json from "
            "https://hotpotqa.github.io; without it, the Hugging Face dataset with the paper's "
            "splits, which needs pip install 'grse-graph[hf]'), --data-locomo PATH or "
            "$GRSE_LOCOMO (locomo10.json from https://github.com/snap-research/locomo; "
            "required). --smoke runs on invented fixtures shipped in the package. "
            "Runs live in OUT/runs/<run id> (task, category, method, variant, actor, seed, "
            "commit and a digest of the settings): a finished run is reused by every table "
            "that needs it, an unfinished one resumed. Paper settings and numbers: "
            "grse_graph/reproduce/paper/ (a checkout's evals/paper)."
        ),
    )
    parser.add_argument(
        "--config",
        type=Path,
        action="append",
        default=[],
        help="grse TOML with the [actor] [critic] [optimizer] endpoints; once per actor "
        "(default: the environment's roles, i.e. the embedded engine)",
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds 0..N-1 (default 3)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the CI size: a few questions, one seed, the embedded small model, small caps, "
        "on invented fixtures shipped in the package (--data-TASK still wins)",
    )
    parser.add_argument(
        "--limit", type=int, default=None, help="first N test questions (a deviation, printed)"
    )
    parser.add_argument("--out", type=Path, default=Path("results"), help="results folder")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the runs that would be made and their estimated calls and tokens per role",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="independent runs at once (endpoints given by --config; on the embedded engine 1)",
    )
    parser.add_argument(
        "--commit", default=None, help="the commit in run ids (default: this checkout's HEAD)"
    )
    parser.add_argument(
        "--paper-dir",
        type=Path,
        default=None,
        help="the paper's settings and numbers (default: the package's, a checkout's evals/paper)",
    )
    for flag, about in TRAIN_SIZES.items():
        parser.add_argument(f"--{flag}", type=int, default=None, help=about)
    parser.add_argument(
        "--additions",
        action="store_true",
        help="train with the project's additions to the paper (memorisation check, GRSE's "
        "output contrast and tool-error rule) on; default: the paper's mode, the project's "
        "additions off. Every table states its mode",
    )
    parser.add_argument(
        "--planted", type=Path, default=None, help="planted-library JSON (Tables 4 and 5)"
    )
    parser.add_argument(
        "--design",
        default=None,
        help="Tables 4 and 5: which repair design (paper: the paper's, LoCoMo single-hop; "
        "demo: the demo task's, sized for a 2-core CPU; default paper)",
    )
    for task, official in OFFICIAL.items():
        parser.add_argument(
            official.flag,
            default=None,
            metavar="PATH",
            help=f"{task} data: {official.file} from {official.source} (default ${official.env}"
            + (
                "; without either, the Hugging Face dataset with the paper's splits)"
                if task == "hotpotqa"
                else "; required unless --smoke)"
            ),
        )
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=None,
        help="a folder of data fixtures standing in for the benchmarks (its fixtures.json names "
        "each task's file and split sizes; default at --smoke: the invented ones shipped in "
        "the package); every table says so at its top. --data-TASK still wins for its task",
    )
    return parser


def context_from(
    table: TableDef,
    args: argparse.Namespace,
    console: Console,
    env: Mapping[str, str] | None = None,
) -> TableContext:
    """The table's context from the command line (and `env`, default the process's: the data
    variables `$GRSE_HOTPOTQA`, `$GRSE_LOCOMO`)."""
    settings = load_settings(args.paper_dir)
    smoke = settings.smoke if args.smoke else None
    seeds = settings.smoke.seeds if args.smoke else args.seeds
    if seeds < 1:
        raise GrseError("--seeds must be at least 1")
    fixtures_dir = args.fixtures or (SMOKE_FIXTURES if args.smoke else None)
    fixtures = load_fixtures(fixtures_dir) if fixtures_dir is not None else None
    given = {task: getattr(args, f"data_{task}") for task in OFFICIAL}
    sources = resolve_sources(
        settings,
        given,
        os.environ if env is None else env,
        (fixtures_dir, fixtures) if fixtures_dir is not None and fixtures is not None else None,
    )
    on_fixtures = {task: s.options for task, s in sources.items() if s.origin == "fixtures"}
    return TableContext(
        settings=settings,
        papers={name: load_paper(name, args.paper_dir) for name in table.papers},
        actors=load_actors(list(args.config), smoke),
        seeds=list(range(seeds)),
        smoke=args.smoke,
        limit=args.limit,
        commit=args.commit or current_commit(),
        data={"demo": None, **{task: source.path for task, source in sources.items()}},
        root=args.out.resolve(),
        planted=args.planted,
        design=args.design,
        paper_mode=not args.additions,
        train_overrides={
            flag.replace("-", "_"): getattr(args, flag.replace("-", "_"))
            for flag in TRAIN_SIZES
            if getattr(args, flag.replace("-", "_")) is not None
        },
        console=console,
        task_options=on_fixtures,
        fixtures=fixtures.about if fixtures is not None and on_fixtures else None,
        sources=sources,
    )


def _number(value: int) -> str:
    return f"{value:,}"


def other_commit_lines(runs: Sequence[RunSpec], root: Path) -> list[str]:
    """One line per commit under whose id runs of this table's work already exist: a table
    resumed after a `git pull` makes its runs anew unless `--commit` names that commit."""
    new = [spec for spec in runs if run_state(spec, root) == "new"]
    return [
        f"note: {len(ids)} of these runs exist at commit {commit} (e.g. {ids[0]}); "
        f"pass --commit {commit} to reuse or resume them instead of starting over"
        for commit, ids in runs_at_other_commits(new, root).items()
    ]


def print_dry_run(ctx: TableContext, table: TableDef, runs: Sequence[RunSpec]) -> None:
    """The header, each run with its state and estimated cost, and the totals per role."""

    def say(text: str) -> None:
        ctx.console.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"dry run of {table.name}: nothing is started")
    for line in table.header(ctx):
        say(f"  {line}")
    pending = []
    for spec in runs:
        state = run_state(spec, ctx.root)
        test = ctx.test_split_size(spec)
        estimate = costs.estimate(spec, ctx.settings, test) if state != "finished" else {}
        if state != "finished":
            pending.append(estimate)
        roles = ", ".join(
            f"{role} {c.calls} calls {_number(c.prompt_tokens)}+{_number(c.completion_tokens)} tok"
            for role, c in estimate.items()
            if c.calls
        )
        cost = f"; est. {roles}" if roles else ""
        say(f"{spec.run_id} [{spec.kind}] {state_action(state)}{cost}")
    say(f"runs: {len(runs)}, to make: {len(pending)}")
    for line in other_commit_lines(runs, ctx.root):
        say(line)
    for role, c in costs.total(pending).items():
        say(
            f"estimated {role}: {_number(c.calls)} calls, {_number(c.prompt_tokens)} prompt + "
            f"{_number(c.completion_tokens)} completion tokens"
        )
    say(f"(per-call sizes: {ctx.settings.cost.about})")


def run_table(table: TableDef, ctx: TableContext, *, jobs: int, dry_run: bool) -> list[Path]:
    """Plan, then print (dry run) or make the runs and write the tables; returns the files."""
    runs = table.plan(ctx)
    if dry_run:
        print_dry_run(ctx, table, runs)
        return []
    embedded = [actor.label for actor in ctx.actors if actor.llm.uses_embedded_engine()]
    if jobs > 1 and embedded:
        # Each run opens its own endpoints: N runs at once would be N engines, each taking
        # every core, slower together than one after the other.
        raise GrseError(
            f"--jobs {jobs} would start {jobs} embedded engines at once (actor {embedded[0]}); "
            "use --jobs 1, or serve one engine (`grse serve local`) and pass it with --config"
        )
    contexts = {actor.label: ctx.run_context(actor) for actor in ctx.actors}
    # Every task the unfinished runs read loads now: no data is one line before any engine.
    pending = [spec for spec in runs if run_state(spec, ctx.root) != "finished"]
    require_data(ctx.sources, pending, lambda spec: contexts[spec.actor].task(spec))
    Manifest(table=table.name, runs=runs).write(ctx.root)

    def say(line: str) -> None:
        ctx.console.print(line, markup=False, highlight=False, soft_wrap=True)

    for line in other_commit_lines(runs, ctx.root):
        say(line)
    results = execute_runs(runs, ctx.root, contexts, jobs=jobs, say=say)
    written: list[Path] = []
    for result_table in table.build(ctx, results):
        md, js = write_table(result_table, ctx.root)
        written += [md, js, *map(Path, result_table.figures)]
        failed = len(result_table.failed_cells())
        say(f"{result_table.table}: {md} ({failed} cell(s) FAILED)")
    return written


def main(name: str, argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """The script of table `name`; returns the exit status (1 on a one-line error). `env`
    replaces the process's environment for the data variables."""
    table = TABLES[name]
    args = parser_for(table).parse_args(argv)
    console = output_console()
    try:
        ctx = context_from(table, args, console, env)
        run_table(table, ctx, jobs=args.jobs, dry_run=args.dry_run)
    except GrseError as error:
        console.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        return 1
    return 0
