"""Does training make the team better? Train on a task slice, then test the empty and the
trained libraries on held-out questions, per method, on the same slice and engine settings.

    python benchmarks/learning.py --task demo [--model default|small|PATH] [--out DIR]
    python benchmarks/learning.py --task hotpotqa \\
        --data ../shared/data/hotpotqa/hotpot_dev_distractor_500.json --methods grse,maskills

`--task demo` uses the settings of `grse demo` (`grse_graph.training.demo`): training questions
from the train split, the gate's validation set from the validation split, the first
`DEMO_TEST_LIMIT` test questions. `--task hotpotqa` splits the file as the task does (hard
questions in file order: train = the first 100, validation = the next 50, test = the rest) and
tests the first `--test` (50) test questions. Each method trains with the same loop settings
(`learning_config`; only the method section differs) on a fresh embedded engine and is tested
greedily by `run_demo`, exactly as `grse demo` does.

Printed per method: the accepted skills with their provenance and gate numbers, the per-question
transitions (declined / wrong / correct) with the 3x3 table, the paired difference of mean
reward with its bootstrap interval; then one table over the methods with the scores, the
transitions, the accepted skills and the times. Each method's run folder is OUT/<method>; a
method whose OUT/<method>/learning.json exists is not run again (its result is printed), an
unfinished one is resumed. The empty library is tested once, in OUT/test_start, and every
method compares against that evaluation: the first method's test time includes it, the others'
do not.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from grse_graph.errors import GrseError
from grse_graph.llm import load_config
from grse_graph.methods.registry import METHOD_NAMES, method_class
from grse_graph.output import output_console
from grse_graph.training.config import TrainConfig
from grse_graph.training.demo import (
    DEMO_SETTINGS,
    DEMO_TEST_LIMIT,
    TEST_FOLDERS,
    DemoResult,
    demo_llm_overrides,
    learning_config,
    print_comparison,
    print_learned,
    run_demo_session,
)
from grse_graph.training.run_folder import RunFolder

RESULT_FILE = "learning.json"
HOTPOTQA_TEST = 50


class LearningRun(BaseModel):
    """One method's finished learning check (OUT/<method>/learning.json)."""

    method: str
    config: TrainConfig
    result: DemoResult
    wall_s: float
    usage: dict[str, Any]


def run_method(
    config: TrainConfig,
    model: str,
    test_limit: int | None,
    folder: Path,
    start_test: Path,
    console: Console,
) -> LearningRun:
    """Train and test one method in `folder` (resuming an unfinished run there); the empty
    library is tested in `start_test`, shared by the methods of one benchmark run."""
    run = RunFolder(folder)
    resume = run.exists()
    if resume and run.read_config() != config:
        raise SystemExit(
            f"{folder} holds a run with other settings; give another --out or delete the folder"
        )
    session = run_demo_session(
        config,
        run,
        model,
        test_limit=test_limit or None,
        console=console,
        start_test=start_test,
        resume=resume,
    )
    return LearningRun(
        method=config.method.name,
        config=config,
        result=session.result,
        wall_s=session.wall_s,
        usage=session.session_usage,
    )


def summary_table(runs: list[LearningRun], title: str) -> Table:
    """One column per method: scores, paired difference, transitions, skills and time."""
    table = Table(title=title)
    table.add_column("measure")
    for r in runs:
        table.add_column(r.method, justify="right")

    def row(label: str, cell: Any) -> None:
        table.add_row(label, *(cell(r) for r in runs))

    row("test questions", lambda r: str(len(r.result.comparison.transitions)))
    row("empty reward", lambda r: f"{r.result.comparison.mean_before:.3f}")
    row("trained reward", lambda r: f"{r.result.comparison.mean_after:.3f}")
    row(
        "paired difference [95% CI]",
        lambda r: (
            f"{r.result.comparison.paired.difference:+.3f} "
            f"[{r.result.comparison.paired.low:+.3f}, {r.result.comparison.paired.high:+.3f}]"
        ),
    )
    for outcome in ("declined", "wrong", "correct"):
        row(
            f"{outcome}: empty -> trained",
            lambda r, o=outcome: (
                f"{r.result.comparison.table.total('before', o)} -> "
                f"{r.result.comparison.table.total('after', o)}"
            ),
        )
    row(
        "became correct / stopped being correct",
        lambda r: f"{r.result.comparison.table.fixed} / {r.result.comparison.table.broken}",
    )
    row(
        "accepted skills",
        lambda r: ", ".join(f"{s.agent}/{s.name}" for s in r.result.learned) or "none",
    )
    row("training (s)", lambda r: f"{r.result.training_s:.0f}")
    row("test (s)", lambda r: f"{r.result.test_s:.0f}")
    row("wall incl. engine start (s)", lambda r: f"{r.wall_s:.0f}")
    row(
        "model calls / tokens",
        lambda r: (
            f"{r.usage.get('total', {}).get('calls', 0)} / "
            f"{r.usage.get('total', {}).get('prompt_tokens', 0)}"
            f"+{r.usage.get('total', {}).get('completion_tokens', 0)}"
        ),
    )
    return table


def main() -> None:
    """Run the learning check for every chosen method and print the comparison."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--task", choices=("demo", "hotpotqa"), default="demo")
    parser.add_argument("--data", default=None, help="the task's data (hotpotqa: its JSON)")
    parser.add_argument("--methods", default="grse", help=f"of {','.join(METHOD_NAMES)}")
    parser.add_argument("--model", default="default", help="embedded model: small|default|PATH")
    parser.add_argument("--iterations", type=int, default=DEMO_SETTINGS["iterations"])
    parser.add_argument("--batch-size", type=int, default=DEMO_SETTINGS["batch_size"])
    parser.add_argument("--validation-size", type=int, default=DEMO_SETTINGS["validation_size"])
    parser.add_argument(
        "--test",
        type=int,
        default=None,
        help=f"first N test questions (demo: {DEMO_TEST_LIMIT}, hotpotqa: {HOTPOTQA_TEST})",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.task == "hotpotqa" and args.data is None:
        raise SystemExit("--task hotpotqa needs --data PATH (the distractor JSON)")
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    for name in methods:
        try:
            method_class(name)  # an unknown name fails before any engine starts
        except GrseError as error:
            raise SystemExit(f"error: {error}") from None
    test_limit = args.test or (DEMO_TEST_LIMIT if args.task == "demo" else HOTPOTQA_TEST)
    out = args.out or Path(tempfile.mkdtemp(prefix="grse-learning-bench-"))
    console = output_console()
    # The protocol's training top-k is the actor family's (20 Qwen, 64 Gemma).
    top_k = load_config(overrides=demo_llm_overrides(args.model)).training_top_k()
    runs: list[LearningRun] = []
    for name in methods:
        folder = out / name
        done = folder / RESULT_FILE
        if done.exists():
            console.print(f"{name}: finished earlier, reusing {done}")
            finished = LearningRun.model_validate_json(done.read_text(encoding="utf-8"))
        else:
            config = learning_config(
                name,
                training_top_k=top_k,
                task=args.task,
                data=str(Path(args.data).resolve()) if args.data else None,
                iterations=args.iterations,
                batch_size=args.batch_size,
                validation_size=args.validation_size,
            )
            try:
                # The methods train with the same loop settings, so their empty team is the
                # same: it is tested once, in OUT/test_start, and shared.
                finished = run_method(
                    config, args.model, test_limit, folder, out / TEST_FOLDERS["start"], console
                )
            except Exception as error:  # one method failing must not hide the others
                console.print(f"{name}: failed: {type(error).__name__}: {error}", markup=False)
                continue
            done.write_text(finished.model_dump_json(indent=2) + "\n", encoding="utf-8")
        console.rule(f"{name}: run folder {folder} (report: {folder / 'report.md'})")
        print_learned(console, finished.result.learned)
        print_comparison(console, finished.result.comparison)
        runs.append(finished)
    if not runs:
        raise SystemExit("every method failed")
    console.print(
        summary_table(
            runs,
            f"learning check: {args.task}, {args.iterations} iteration(s) x {args.batch_size} "
            f"question(s), |V| = {args.validation_size}, {test_limit or 'all'} test question(s), "
            f"model {args.model}",
        )
    )


if __name__ == "__main__":
    main()
