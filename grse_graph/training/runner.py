"""Run the training graph with a checkpointer (SQLite in the run folder, or PostgreSQL): start,
resume, review."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.types import Command
from pydantic import BaseModel, Field

from grse_graph.checkpointing import CheckpointerSpec, open_run_checkpointer
from grse_graph.errors import GrseError
from grse_graph.skills import SkillLibrary
from grse_graph.tracing import root_run_config

from .graph import TrainingDeps, compile_training_graph, training_run_config
from .lock import guard_run_folder
from .records import GateRecord
from .review import ReviewAnswer, ReviewRequest

Reviewer = Callable[[ReviewRequest], ReviewAnswer]


class IterationScores(BaseModel):
    """One iteration's validation scores (mean reward over V x H), read from its gate: `base`
    is b_t, the score of the libraries the iteration started from; `candidates` the score s_i
    of each agent's candidate library; `accepted` the agents whose candidate the gate kept."""

    iteration: int
    base: float
    candidates: dict[str, float]
    accepted: list[str]

    @classmethod
    def of(cls, gate: GateRecord) -> IterationScores:
        """The scores recorded by one gate."""
        return cls(
            iteration=gate.iteration,
            base=gate.base_score,
            candidates={d.agent: d.candidate_score for d in gate.decisions},
            accepted=[d.agent for d in gate.decisions if d.accepted],
        )


class TrainResult(BaseModel):
    """Where the run is, what it decided and what it ended with.

    `final_libraries` are the final libraries' folders relative to `run_dir`; `libraries` the
    same libraries loaded, by agent (left out of dumps: the folders hold them). `usage` is the
    run's per-role accounting as in RUN/usage.json (empty when the caller counts none).
    """

    run_dir: str
    iterations_done: int
    gates: list[GateRecord]
    final_libraries: dict[str, str]
    libraries: dict[str, SkillLibrary] = Field(default_factory=dict, exclude=True)
    usage: dict[str, Any] = Field(default_factory=dict)

    @property
    def scores(self) -> list[IterationScores]:
        """Each iteration's validation scores, first to last (the first `base` is the starting
        libraries' score)."""
        return [IterationScores.of(gate) for gate in self.gates]


def _pending_interrupts(snapshot: Any) -> list[Any]:
    found = list(getattr(snapshot, "interrupts", ()) or ())
    if not found:
        for task in getattr(snapshot, "tasks", ()) or ():
            found.extend(getattr(task, "interrupts", ()) or ())
    return found


@guard_run_folder  # one process per run folder; disk failures as one line
async def run_training(
    deps: TrainingDeps,
    *,
    resume: bool = False,
    reviewer: Reviewer | None = None,
    checkpointer: CheckpointerSpec | None = None,
) -> TrainResult:
    """Run (or continue) the training loop to the end.

    A new run refuses a folder that already holds one; `resume=True` continues the thread in
    RUN/checkpoints.sqlite from its last checkpoint, re-running only unfinished tasks (and
    reusing any unit already in the run folder). Each `interrupt` of the review node is
    answered by `reviewer`; without one, a run configured with `review` raises.
    `checkpointer` chooses where checkpoints live (`grse_graph.checkpointing`; default SQLite
    in the run folder, a resume defaults to the run's own). Each session is one root trace;
    rollouts nest in it through their node's config.
    """
    run = deps.run
    async with open_run_checkpointer(checkpointer, run.path, resume=resume) as (saver, thread):
        if not resume:
            run.write_config(deps.config)
        config = training_run_config(deps.config, thread_id=thread)
        graph = compile_training_graph(deps, checkpointer=saver)
        payload: Any = None if resume else {}
        while True:
            traced, _ = root_run_config(config)
            async for _ in graph.astream(payload, traced, stream_mode="updates"):
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
    final = dict(values.get("libraries", {}))
    return TrainResult(
        run_dir=str(run.path),
        iterations_done=len(gates),
        gates=gates,
        final_libraries=final,
        libraries={
            agent: run.load_library(path, agent, deps.config.library_limit)
            for agent, path in final.items()
        },
        usage=deps.usage() if deps.usage is not None else {},
    )
