"""Run the training graph with a SQLite checkpointer in the run folder: start, resume, review."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiosqlite
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command
from pydantic import BaseModel

from grse_graph.errors import GrseError

from .graph import TrainingDeps, compile_training_graph, training_run_config
from .records import GateRecord
from .review import ReviewAnswer, ReviewRequest

Reviewer = Callable[[ReviewRequest], ReviewAnswer]


class TrainResult(BaseModel):
    """Where the run is and what it decided."""

    run_dir: str
    iterations_done: int
    gates: list[GateRecord]
    final_libraries: dict[str, str]


def _pending_interrupts(snapshot: Any) -> list[Any]:
    found = list(getattr(snapshot, "interrupts", ()) or ())
    if not found:
        for task in getattr(snapshot, "tasks", ()) or ():
            found.extend(getattr(task, "interrupts", ()) or ())
    return found


async def run_training(
    deps: TrainingDeps, *, resume: bool = False, reviewer: Reviewer | None = None
) -> TrainResult:
    """Run (or continue) the training loop to the end.

    A new run refuses a folder that already holds one; `resume=True` continues the thread in
    RUN/checkpoints.sqlite from its last checkpoint, re-running only unfinished tasks (and
    reusing any unit already in the run folder). Each `interrupt` of the review node is
    answered by `reviewer`; without one, a run configured with `review` raises.
    """
    run = deps.run
    if resume and not run.checkpoint_path.exists():
        raise GrseError(f"{run.checkpoint_path}: no checkpoints to resume from")
    if not resume and run.checkpoint_path.exists():
        raise GrseError(f"{run.path}: already holds a run; use --resume {run.path} to continue it")
    run.path.mkdir(parents=True, exist_ok=True)
    if not resume:
        run.write_config(deps.config)
    config = training_run_config(deps.config)
    # Autocommit: when a run dies mid-write (an exception cancels the loop's pending
    # checkpoint writes), no transaction is left open on the abandoned connection, so a resumed
    # run can write (it otherwise failed with "database is locked").
    async with aiosqlite.connect(run.checkpoint_path, isolation_level=None) as conn:
        graph = compile_training_graph(deps, checkpointer=AsyncSqliteSaver(conn))
        payload: Any = None if resume else {}
        while True:
            async for _ in graph.astream(payload, config, stream_mode="updates"):
                pass
            snapshot = await graph.aget_state(config)
            interrupts = _pending_interrupts(snapshot)
            if not interrupts:
                break
            if reviewer is None:
                raise GrseError("the run is waiting for a skill review; rerun with --review")
            request = ReviewRequest.model_validate(interrupts[0].value)
            payload = Command(resume=reviewer(request).model_dump())
        values = snapshot.values
    if snapshot.next:
        raise GrseError(f"{run.path}: the run stopped before its end (next: {snapshot.next})")
    gates = run.gate.read()
    return TrainResult(
        run_dir=str(run.path),
        iterations_done=len(gates),
        gates=gates,
        final_libraries=dict(values.get("libraries", {})),
    )
