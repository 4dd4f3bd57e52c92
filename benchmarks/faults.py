"""The kill/resume matrix: `grse train` SIGKILLed inside each stage, then `--resume`.

    python benchmarks/faults.py                 # against the fake OpenAI server (fast)
    flock /tmp/grse-engine.lock python benchmarks/faults.py --engine small

For each kill point a fresh run is started, killed at that point (at the n-th model request of
a kind, or for the commit stage, which makes no model call, as soon as it starts writing the
next libraries), checked, resumed to its end and checked again. Printed per kill point: model
calls before the kill and after the resume, against an uninterrupted run the calls made twice
(the killed request and earlier calls of its unfinished unit) and never made (must be 0; fake
server only, whose replies are deterministic), units finished before the kill, units repeated
after the resume (must be 0), files that do not parse (must be 0, after the kill and after the
resume), temporary leftovers and the wall time of the resumed session.

With ``--engine small`` the fake server runs as a counting proxy in front of the embedded
engine, so the kills happen at the same requests; the task is then a five-line JSONL task, one
iteration, and a kill point whose request never comes (no merge call in a first iteration) is
reported as not reached.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from rich.table import Table

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from grse_graph.llm.config import EngineSettings, default_cache_dir  # noqa: E402
from grse_graph.llm.engine import LocalEngine  # noqa: E402
from grse_graph.output import output_console  # noqa: E402
from tests.fakeserver import FakeOpenAIServer  # noqa: E402
from tests.faults.harness import (  # noqa: E402
    KILL_POINTS,
    KillOutcome,
    KillPoint,
    Reference,
    Setup,
    kill_and_resume,
    reference_run,
)

TINY_TASK = [
    ("train", "What colour is the barn?", "red", "The barn on the hill is painted red."),
    ("train", "Which city hosts the fair?", "Oslo", "Every spring the fair is held in Oslo."),
    ("validation", "What does Mia play?", "violin", "Mia plays the violin in a quartet."),
    ("validation", "How many cats live here?", "three", "Three cats live in this house."),
    ("test", "What is the dog's name?", "Rex", "The dog is called Rex."),
]


def _engine_setup(workdir: Path) -> Setup:
    data = workdir / "tiny.jsonl"
    data.write_text(
        "".join(
            json.dumps({"id": f"q{i}", "split": s, "question": q, "answer": a, "context": c}) + "\n"
            for i, (s, q, a, c) in enumerate(TINY_TASK)
        )
    )
    flags = ("--task", "jsonl", "--data", str(data), "--iterations", "1", "--batch-size", "2",
             "--group-size", "2", "--validation-size", "2", "--concurrency", "1")  # fmt: skip
    caps = {"GRSE_ACTOR_MAX_TOKENS": "48", "GRSE_CRITIC_MAX_TOKENS": "300",
            "GRSE_OPTIMIZER_MAX_TOKENS": "200"}  # fmt: skip
    return Setup(flags=flags, env=caps, timeout_s=600.0, session_timeout_s=1800.0)


COLUMNS = (
    "kill point", "killed at", "calls before kill", "calls after resume", "calls made twice",
    "calls never made", "units before kill", "units repeated", "files not parsing", "leftovers",
    "resume", "resume wall (s)",
)  # fmt: skip


def _row(outcome: KillOutcome, reference: Reference | None) -> list[str]:
    reached = outcome.killed.returncode == -9
    problems = len(outcome.problems_after_kill) + len(outcome.problems_after_resume)
    point = outcome.point
    if point.watch is not None:
        trigger = f"{point.watch} appears"
    else:
        assert point.match is not None
        trigger = f"{point.match.tool or point.match.role} request #{point.nth}"
    return [
        point.stage,
        trigger if reached else f"{trigger}: not reached (exit {outcome.killed.returncode})",
        str(len(outcome.before)),
        str(len(outcome.after)),
        str(outcome.calls_repeated(reference)) if reference is not None and reached else "-",
        str(outcome.calls_missing(reference)) if reference is not None and reached else "-",
        str(outcome.units_before_kill),
        str(len(outcome.repeated)),
        str(problems),
        str(len(outcome.leftovers)),
        "ok" if outcome.resumed.returncode == 0 else f"exit {outcome.resumed.returncode}",
        f"{outcome.resumed.wall_s:.1f}",
    ]


def run_matrix(
    workdir: Path,
    make_server: Callable[[], FakeOpenAIServer],
    setup: Setup,
    reference: bool,
    points: Sequence[KillPoint] = KILL_POINTS,
) -> tuple[Table, list[KillOutcome], Reference | None]:
    """Every kill point once; the table, the outcomes and the uninterrupted run (if run)."""
    base = reference_run(workdir, make_server, setup) if reference else None
    table = Table(title="kill / resume matrix (grse train)")
    for column in COLUMNS:
        table.add_column(
            column, justify="left" if column in {"kill point", "killed at"} else "right"
        )
    outcomes: list[KillOutcome] = []
    for point in points:
        outcome = kill_and_resume(point, workdir, make_server, f"kill-{point.stage}", setup)
        outcomes.append(outcome)
        table.add_row(*_row(outcome, base))
    if base is not None:
        table.caption = (
            f"uninterrupted run: {len(base.records)} model calls, {base.wall_s:.1f} s; "
            "calls before + after = uninterrupted + made twice"
        )
    return table, outcomes, base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--engine", choices=["small", "default"], help="embedded engine model")
    parser.add_argument("--keep", type=Path, help="keep the run folders in this folder")
    parser.add_argument(
        "--points",
        default=",".join(p.stage for p in KILL_POINTS),
        help="comma-separated kill points (default: all)",
    )
    args = parser.parse_args()
    wanted = set(args.points.split(","))
    points = [p for p in KILL_POINTS if p.stage in wanted]
    if not points or len(points) != len(wanted):
        parser.error(f"--points: choose from {', '.join(p.stage for p in KILL_POINTS)}")
    console = output_console()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="grse-faults-") as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        if args.engine is None:
            table, outcomes, base = run_matrix(
                workdir, FakeOpenAIServer, Setup(), reference=True, points=points
            )
        else:
            settings = EngineSettings(
                model=args.engine, n_ctx=4096, threads=2, cache_dir=default_cache_dir()
            )
            with LocalEngine(settings, log_path=workdir / "engine.log") as engine:
                table, outcomes, base = run_matrix(
                    workdir,
                    lambda: FakeOpenAIServer(upstream=engine.base_url, lifetime_s=3600),
                    _engine_setup(workdir),
                    reference=False,
                    points=points,
                )
    console.print(table)
    console.print(f"total wall time {time.perf_counter() - started:.0f} s")
    bad = [
        o
        for o in outcomes
        if o.repeated
        or o.problems_after_kill
        or o.problems_after_resume
        or (base is not None and o.calls_missing(base))
    ]
    for outcome in bad:
        console.print(f"{outcome.point.stage}: {outcome.repeated} {outcome.problems_after_resume}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
