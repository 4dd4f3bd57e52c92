"""Make a manifest's runs: finished ones are read back, the others are made (resumed where
their folder holds an unfinished attempt), up to `jobs` at a time, each after the runs it
needs. A run that raises is recorded as failed (`failure.json`) and every run that needs it
fails with a line naming it; the cells that read them are marked failed, never zero."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from .executors import EXECUTORS, Executor, RunContext
from .manifest import RunKind, RunSpec, run_state
from .outcome import (
    RunFailure,
    RunOutcome,
    read_outcome,
    write_failure,
    write_outcome,
    write_spec,
)

Result = RunOutcome | RunFailure
Say = Callable[[str], None]


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".rstrip(": ")


def make_run(
    spec: RunSpec,
    root: Path,
    ctx: RunContext,
    needed: Mapping[str, RunOutcome],
    executors: Mapping[RunKind, Executor],
) -> Result:
    """One run: its outcome (written to its folder) or its failure (written too)."""
    folder = spec.folder(root)
    write_spec(spec, folder)
    try:
        outcome = executors[spec.kind](spec, folder, ctx, needed)
    except Exception as error:  # a failed run is a failed cell, not a crashed table
        failure = RunFailure(run_id=spec.run_id, error=_one_line(error))
        write_failure(failure, folder)
        return failure
    write_outcome(outcome, folder)
    return outcome


def execute_runs(
    runs: Sequence[RunSpec],
    root: Path,
    contexts: Mapping[str, RunContext],
    *,
    jobs: int = 1,
    say: Say = print,
    executors: Mapping[RunKind, Executor] = EXECUTORS,
) -> dict[str, Result]:
    """Every run's result by id. `contexts` maps each spec's actor to its context."""
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    specs = {spec.run_id: spec for spec in runs}
    results: dict[str, Result] = {}
    for run_id, spec in specs.items():
        if run_state(spec, root) == "finished":
            results[run_id] = read_outcome(spec.folder(root))
            say(f"reused {run_id}")
    pending = {i: s for i, s in specs.items() if i not in results}
    unknown = {n for s in pending.values() for n in s.needs if n not in specs}
    if unknown:
        raise ValueError(f"a run needs {sorted(unknown)[0]}, which the manifest does not hold")
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        running: dict[Future[Result], str] = {}
        while pending or running:
            for run_id, spec in list(pending.items()):
                if len(running) >= jobs:  # "running" is said when a run starts, not queues
                    break
                if any(n not in results for n in spec.needs):
                    continue
                del pending[run_id]
                failed = [n for n in spec.needs if isinstance(results[n], RunFailure)]
                if failed:
                    failure = RunFailure(
                        run_id=run_id, error=f"needs run {failed[0]}, which failed"
                    )
                    write_failure(failure, spec.folder(root))
                    results[run_id] = failure
                    say(f"failed {run_id}: {failure.error}")
                    continue
                needed = {n: results[n] for n in spec.needs}
                outcomes = {n: r for n, r in needed.items() if isinstance(r, RunOutcome)}
                say(f"running {run_id}")
                ctx = contexts[spec.actor]
                if jobs > 1:
                    # Runs side by side cannot share one live display: each is quiet (its
                    # files say what it did) and this loop reports its start and end.
                    ctx = replace(ctx, console=Console(quiet=True))
                future = pool.submit(make_run, spec, root, ctx, outcomes, executors)
                running[future] = run_id
            if not running:
                if pending:  # every pending run waits on one that cannot come
                    raise ValueError(f"runs wait on each other: {sorted(pending)}")
                break
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                run_id = running.pop(future)
                result = future.result()
                results[run_id] = result
                if isinstance(result, RunFailure):
                    say(f"failed {run_id}: {result.error}")
                else:
                    say(f"finished {run_id} ({result.wall_s:.0f} s)")
    return results
