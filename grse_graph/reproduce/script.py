"""The one command line of every `evals/` script and of `grse reproduce TABLE`: plan the
table's runs, print them with their estimated cost (`--dry-run`), or make them (reusing the
finished, resuming the unfinished, `--jobs` at a time) and write `OUT/<table>.md`, its JSON and
its figures."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console

from grse_graph.errors import GrseError

from . import cost as costs
from .context import TableContext, current_commit, load_actors, load_fixtures
from .deviations import deviations
from .manifest import Manifest, RunSpec, run_state, state_action
from .paper import load_paper
from .registry import TABLES
from .scheduler import execute_runs
from .settings import load_settings
from .table import write_table
from .tables.base import TableDef

DATA_DEFAULTS = {
    "hotpotqa": ("hotpotqa", "hotpot_dev_distractor_500.json"),
    "locomo": ("locomo", "locomo10.json"),
}
"""Each task's file under the shared data folder ($GRSE_SHARED_DATA or ../shared/data)."""
TRAIN_SIZES = {
    "iterations": "training iterations (default Table 8's T = 5; a deviation, printed)",
    "batch-size": "training questions per iteration (a deviation, printed)",
    "validation-size": "the gate's validation questions (default the whole split)",
    "group-size": "G of the grouped methods (default Table 8's 4; not the G = 1 variant)",
}
"""Machine-sized training: loop sizes over Table 8's (or the smoke size)."""


def _shared_data() -> Path:
    configured = os.environ.get("GRSE_SHARED_DATA")
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parents[3] / "shared" / "data"


def parser_for(table: TableDef) -> argparse.ArgumentParser:
    """The scripts' options; `--help` says what the table reproduces and what it costs."""
    parser = argparse.ArgumentParser(
        prog=table.script,
        description=f"Reproduces {table.reproduces}. Cost: {table.cost}.",
        epilog=(
            "Runs live in OUT/runs/<run id> (task, category, method, variant, actor, seed, "
            "commit and a digest of the settings): a finished run is reused by every table "
            "that needs it, an unfinished one resumed. Paper settings and numbers: "
            "evals/paper/."
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
        help="the CI size: a few questions, one seed, the embedded small model, small caps",
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
    parser.add_argument("--jobs", type=int, default=1, help="independent runs at once")
    parser.add_argument(
        "--commit", default=None, help="the commit in run ids (default: this checkout's HEAD)"
    )
    parser.add_argument("--paper-dir", type=Path, default=None, help="default evals/paper")
    for flag, about in TRAIN_SIZES.items():
        parser.add_argument(f"--{flag}", type=int, default=None, help=about)
    parser.add_argument(
        "--paper-mode",
        action="store_true",
        help="train in the paper's mode: the project's additions (memorisation check, GRSE's "
        "output contrast and tool-error rule) off; every table states its mode",
    )
    parser.add_argument(
        "--planted", type=Path, default=None, help="planted-library JSON (Tables 4 and 5)"
    )
    for task in DATA_DEFAULTS:
        parser.add_argument(
            f"--data-{task}", default=None, help=f"{task} data (default: the shared data folder)"
        )
    parser.add_argument(
        "--fixtures",
        type=Path,
        default=None,
        help="a folder of data fixtures standing in for the benchmarks (its fixtures.json names "
        "each task's file and split sizes; tests/fixtures/evals holds the smoke test's invented "
        "ones); every table says so at its top. --data-TASK still wins for its task",
    )
    return parser


def context_from(table: TableDef, args: argparse.Namespace, console: Console) -> TableContext:
    """The table's context from the command line."""
    settings = load_settings(args.paper_dir)
    smoke = settings.smoke if args.smoke else None
    seeds = settings.smoke.seeds if args.smoke else args.seeds
    if seeds < 1:
        raise GrseError("--seeds must be at least 1")
    fixtures = load_fixtures(args.fixtures) if args.fixtures is not None else None
    fixture_data = fixtures.data(args.fixtures) if fixtures is not None else {}
    options = fixtures.options() if fixtures is not None else {}
    data: dict[str, str | None] = {"demo": None}
    for task, (folder, name) in DATA_DEFAULTS.items():
        given = getattr(args, f"data_{task}")
        if given:
            options.pop(task, None)
        elif task in fixture_data:
            data[task] = fixture_data[task]
            continue
        path = Path(given) if given else _shared_data() / folder / name
        data[task] = str(path.resolve())
    return TableContext(
        settings=settings,
        papers={name: load_paper(name, args.paper_dir) for name in table.papers},
        actors=load_actors(list(args.config), smoke),
        seeds=list(range(seeds)),
        smoke=args.smoke,
        limit=args.limit,
        commit=args.commit or current_commit(),
        data=data,
        root=args.out.resolve(),
        planted=args.planted,
        paper_mode=args.paper_mode,
        train_overrides={
            flag.replace("-", "_"): getattr(args, flag.replace("-", "_"))
            for flag in TRAIN_SIZES
            if getattr(args, flag.replace("-", "_")) is not None
        },
        console=console,
        task_options=options,
        fixtures=fixtures.about if fixtures is not None and options else None,
    )


def _number(value: int) -> str:
    return f"{value:,}"


def print_dry_run(ctx: TableContext, table: TableDef, runs: Sequence[RunSpec]) -> None:
    """The header, each run with its state and estimated cost, and the totals per role."""

    def say(text: str) -> None:
        ctx.console.print(text, markup=False, highlight=False, soft_wrap=True)

    say(f"dry run of {table.name}: nothing is started")
    for line in deviations(ctx, runs):
        say(f"  {line}")
    pending = []
    for spec in runs:
        state = run_state(spec, ctx.root)
        test = _test_size(ctx, spec)
        estimate = costs.estimate(spec, ctx.settings.cost, test) if state != "finished" else {}
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
    for role, c in costs.total(pending).items():
        say(
            f"estimated {role}: {_number(c.calls)} calls, {_number(c.prompt_tokens)} prompt + "
            f"{_number(c.completion_tokens)} completion tokens"
        )
    say(f"(per-call sizes: {ctx.settings.cost.about})")


def _test_size(ctx: TableContext, spec: RunSpec) -> int | None:
    try:
        return len(ctx.run_context(ctx.actors[0]).task(spec).split("test"))
    except Exception:  # no data here: the estimate uses the limit alone
        return None


def run_table(table: TableDef, ctx: TableContext, *, jobs: int, dry_run: bool) -> list[Path]:
    """Plan, then print (dry run) or make the runs and write the tables; returns the files."""
    runs = table.plan(ctx)
    if dry_run:
        print_dry_run(ctx, table, runs)
        return []
    Manifest(table=table.name, runs=runs).write(ctx.root)
    contexts = {actor.label: ctx.run_context(actor) for actor in ctx.actors}

    def say(line: str) -> None:
        ctx.console.print(line, markup=False, highlight=False, soft_wrap=True)

    results = execute_runs(runs, ctx.root, contexts, jobs=jobs, say=say)
    written: list[Path] = []
    for result_table in table.build(ctx, results):
        md, js = write_table(result_table, ctx.root)
        written += [md, js, *map(Path, result_table.figures)]
        failed = len(result_table.failed_cells())
        say(f"{result_table.table}: {md} ({failed} cell(s) FAILED)")
    return written


def main(name: str, argv: Sequence[str] | None = None) -> int:
    """The script of table `name`; returns the exit status (1 on a one-line error)."""
    table = TABLES[name]
    args = parser_for(table).parse_args(argv)
    console = Console()
    try:
        ctx = context_from(table, args, console)
        run_table(table, ctx, jobs=args.jobs, dry_run=args.dry_run)
    except GrseError as error:
        console.print(f"error: {error}", markup=False, highlight=False, soft_wrap=True)
        return 1
    return 0
