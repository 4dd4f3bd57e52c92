"""Rollout stage: one Send per (question, g); the first agent's n=G opening; team executions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send
from pydantic import BaseModel

from grse_graph.jsonl import JsonlStore
from grse_graph.llm.affinity import keyed_context, question_key
from grse_graph.llm.provider import SamplingSettings
from grse_graph.team import PresampledReply, run_rollout, sample_openings
from grse_graph.team.rollout import Rollout
from grse_graph.team.run import EXECUTION_ERRORS
from grse_graph.team.spec import TeamSpec

from ..context import TrainingContext
from ..ids import derive_seed, opening_unit_id, question_order, rollout_unit_id
from ..progress import Stage
from ..records import OpeningRecord
from ..state import RolloutUnit, TrainingState

T = TypeVar("T")
RecordT = TypeVar("RecordT", bound=BaseModel)
logger = logging.getLogger(__name__)


async def isolated(coroutine: Coroutine[Any, Any, T], question_id: str) -> T:
    """Await a team execution about `question_id` outside the training graph's run context,
    its requests carrying the question's affinity key (`grse_graph.llm.affinity`).

    Inside a node, a nested graph inherits the training checkpointer and checkpoints every
    team step as a subgraph: hundreds of kilobytes per rollout and pickled task objects in the
    checkpoint database. The run folder already keys each finished rollout, so the team runs
    as its own root run (its metadata names the iteration, question and rollout).
    """
    return await asyncio.create_task(coroutine, context=keyed_context(question_key(question_id)))


def team_seed(base: int, unit_id: str) -> int:
    """The seed a method's own choice of a unit's team uses (`TeamRequest.seed`)."""
    return derive_seed(base, f"{unit_id}/route")


async def unit_team(
    ctx: TrainingContext,
    libraries: Mapping[str, str],
    question_id: str,
    unit_id: str,
    *,
    iteration: int,
    training: bool,
) -> TeamSpec:
    """The team the method chooses for one unit, from the unit's libraries and the method's
    state before the round (run-folder reads off the event loop: a graph server refuses
    blocking file I/O on it)."""
    libraries_loaded = await asyncio.to_thread(ctx.load, libraries)
    state = await asyncio.to_thread(ctx.prior_state, iteration)
    return ctx.team_for(
        libraries_loaded,
        ctx.question(question_id),
        state,
        training=training,
        seed=team_seed(ctx.config.seed, unit_id),
    )


async def append_unit_record(
    store: JsonlStore[RecordT], unit: Mapping[str, Any], **outcome: Any
) -> None:
    """Record a finished unit in `store`: the unit's fields its record keeps, plus `outcome`.
    Written off the event loop (a graph server refuses blocking file I/O on it)."""
    record = store.model.model_validate({**unit, **outcome})
    await asyncio.to_thread(store.append, record)


async def execute(
    ctx: TrainingContext,
    libraries: Mapping[str, str],
    question_id: str,
    unit_id: str,
    *,
    sampling: SamplingSettings,
    group_index: int,
    iteration: int,
    stage: Stage,
    opening: PresampledReply | None = None,
    parent: RunnableConfig | None = None,
) -> Rollout:
    """One team execution under the given libraries (a training or validation unit) by the
    team the method chooses for it, nested in the trace of `parent` (the node's config) when
    given.

    An execution that still raises one of `EXECUTION_ERRORS` after `config.max_attempts` tries
    (for example a prompt beyond the actor's context, which repeats on every try) is returned
    as a failed rollout:
    `error` set, reward 0, recorded and counted like a failed question of `grse eval`, so one
    execution cannot stop a run.
    """
    team = await unit_team(
        ctx,
        libraries,
        question_id,
        unit_id,
        iteration=iteration,
        training=stage != "validation",
    )
    attempts = ctx.config.max_attempts
    for attempt in range(1, attempts + 1):
        try:
            return await isolated(
                run_rollout(
                    team,
                    ctx.task,
                    ctx.question(question_id),
                    ctx.provider,
                    sampling=sampling,
                    rollout_id=unit_id,
                    group_index=group_index,
                    metadata={"iteration": iteration, "stage": stage},
                    max_tokens=ctx.config.actor_max_tokens,
                    opening=opening,
                    parent=parent,
                ),
                question_id,
            )
        except EXECUTION_ERRORS as error:
            if attempt < attempts:
                continue
            logger.warning("%s failed after %d attempt(s): %s", unit_id, attempts, error)
            return Rollout(
                rollout_id=unit_id,
                question_id=question_id,
                group_index=group_index,
                seed=sampling.seed,
                reward=0.0,
                error=f"{type(error).__name__}: {error}",
            )
    raise AssertionError("unreachable: max_attempts >= 1")


class RolloutStage:
    """The `sample_batch` router's Sends and the `rollout` node."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx
        self.group_size = ctx.method.rollouts_per_question()
        # A team whose topology has no shared first call (a graph of your own) has nothing to
        # presample for the group.
        self.presample = (
            ctx.config.first_agent_n and self.group_size > 1 and ctx.team.opening_turn() is not None
        )

    def send(self, state: TrainingState) -> list[Send]:
        """One Send per training rollout of the batch."""
        iteration = state["iteration"]
        seed = self.ctx.config.seed
        sends = []
        # Question-major order: a group's G rollouts are queued together, so the engine sees
        # the shared prompt prefix back to back and serves it from its prefix cache.
        for qid, g in question_order(state["batch"], self.group_size):
            unit_id = rollout_unit_id(iteration, qid, g)
            unit: RolloutUnit = {
                "iteration": iteration,
                "question_id": qid,
                "group_index": g,
                "seed": derive_seed(seed, unit_id),
                "unit_id": unit_id,
                "libraries": state["libraries"],
                "library_hashes": state["library_hashes"],
            }
            sends.append(Send("rollout", unit))
        return sends

    async def sample_group_opening(
        self, unit: RolloutUnit, parent: RunnableConfig | None = None
    ) -> OpeningRecord:
        """The first agent's first replies for the unit's whole group, from one n=G call."""
        ctx, cfg = self.ctx, self.ctx.config
        opening_id = opening_unit_id(unit["iteration"], unit["question_id"])
        team = await unit_team(
            ctx,
            unit["libraries"],
            unit["question_id"],
            opening_id,
            iteration=unit["iteration"],
            training=True,
        )
        replies = await isolated(
            sample_openings(
                team,
                ctx.task,
                ctx.question(unit["question_id"]),
                ctx.provider,
                sampling=cfg.training_sampling.model_copy(
                    update={"seed": derive_seed(cfg.seed, opening_id)}
                ),
                n=self.group_size,
                metadata={"iteration": unit["iteration"], "stage": "rollouts"},
                max_tokens=cfg.actor_max_tokens,
                parent=parent,
            ),
            unit["question_id"],
        )
        return OpeningRecord(
            iteration=unit["iteration"],
            unit_id=opening_id,
            question_id=unit["question_id"],
            requested=self.group_size,
            library_hashes=unit["library_hashes"],
            replies=replies,
        )

    def group_started(self, unit: RolloutUnit) -> bool:
        """Whether a rollout of the unit's group is already recorded (then n=G would waste)."""
        it, qid = unit["iteration"], unit["question_id"]
        rollouts = self.ctx.run.rollouts
        return any(
            rollouts.get(rollout_unit_id(it, qid, g)) is not None for g in range(self.group_size)
        )

    async def rollout(self, unit: RolloutUnit, config: RunnableConfig) -> dict[str, Any]:
        """One training rollout, reused from the run folder when it is already there."""
        ctx, cfg = self.ctx, self.ctx.config
        unit_id = unit["unit_id"]
        reused = ctx.run.rollouts.get(unit_id) is not None
        if not reused:
            opening = None
            if self.presample:
                try:
                    opening = await ctx.openings.reply_for(
                        opening_unit_id(unit["iteration"], unit["question_id"]),
                        unit["group_index"],
                        lambda: self.sample_group_opening(unit, config),
                        may_sample=not self.group_started(unit),
                    )
                except EXECUTION_ERRORS:
                    # The shared opening is a saving, not a requirement: each rollout then
                    # makes its own first call, whose failure `execute` records.
                    opening = None
            result = await execute(
                ctx,
                unit["libraries"],
                unit["question_id"],
                unit_id,
                sampling=cfg.training_sampling.model_copy(update={"seed": unit["seed"]}),
                group_index=unit["group_index"],
                iteration=unit["iteration"],
                stage="rollouts",
                opening=opening,
                parent=config,
            )
            await append_unit_record(ctx.run.rollouts, unit, rollout=result)
        ctx.done(unit["iteration"], "rollouts", unit_id, reused=reused)
        return {"rollouts_done": [unit_id]}
