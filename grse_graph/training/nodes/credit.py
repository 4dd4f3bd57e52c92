"""Credit stage: the method chooses the batch's credit units, one Send per unit, one credit call
each. A credit call that fails (unparsable output, a refused request) costs its unit, not the
run: the method's failure record is stored and the report counts it."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from langgraph.types import Send

from grse_graph.errors import GrseError, ModelRequestRefused, StructuredOutputError
from grse_graph.llm.affinity import affinity, question_key
from grse_graph.methods.base import CreditInputs, CreditUnit, QuestionRollouts

from ..context import TrainingContext
from ..ids import rollout_unit_id
from ..records import RolloutRecord
from ..state import CriticUnit, TrainingState

logger = logging.getLogger(__name__)

CREDIT_FAILURES: tuple[type[GrseError], ...] = (StructuredOutputError, ModelRequestRefused)
"""Errors of one credit call that are recorded for its unit instead of failing the run."""


class CreditStage:
    """The `groups` node, the `critic` router's Sends and the `critic` node."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    def rollout(self, unit_id: str) -> RolloutRecord:
        """A finished training rollout (`GrseError` if the run folder lacks it)."""
        record = self.ctx.run.rollouts.get(unit_id)
        if record is None:
            raise GrseError(f"{self.ctx.run.rollouts.path}: rollout {unit_id} is missing")
        return record

    def groups(self, state: TrainingState) -> dict[str, Any]:
        """Ask the method for the batch's credit units; store the records of skipped ones."""
        ctx = self.ctx
        iteration = state["iteration"]
        per_question = ctx.method.rollouts_per_question()
        batch = []
        for qid in state["batch"]:
            ids = [rollout_unit_id(iteration, qid, g) for g in range(per_question)]
            rewards = [self.rollout(i).rollout.reward for i in ids]
            batch.append(QuestionRollouts(question_id=qid, rollout_ids=ids, rewards=rewards))
        chosen = ctx.method.credit_units(iteration, batch)
        for record in chosen.skipped:
            if ctx.credits.get(record.unit_id) is None:
                ctx.credits.append(record)
        ctx.started(iteration, "critic", len(chosen.units))
        return {"credit_units": [u.model_dump() for u in chosen.units]}

    def send(self, state: TrainingState) -> list[Send] | str:
        """One Send per credit unit, or straight on to the probe and plan when there is none."""
        sends = []
        for raw in state.get("credit_units", []):
            unit = CreditUnit.model_validate(raw)
            payload: CriticUnit = {
                "iteration": state["iteration"],
                "question_id": unit.question_id,
                "unit_id": unit.unit_id,
                "rollout_ids": list(unit.rollout_ids),
                "libraries": state["libraries"],
            }
            sends.append(Send("critic", payload))
        return sends or "probe"

    async def credit(self, payload: CriticUnit) -> dict[str, Any]:
        """One credit call, reused from the run folder when its record is already there."""
        ctx = self.ctx
        unit_id = payload["unit_id"]
        reused = ctx.credits.get(unit_id) is not None
        if not reused:
            unit = CreditUnit(
                unit_id=unit_id,
                question_id=payload["question_id"],
                rollout_ids=payload["rollout_ids"],
            )
            inputs = CreditInputs(
                iteration=payload["iteration"],
                question=ctx.question(unit.question_id),
                # Run-folder reads and writes off the event loop (a graph server refuses them).
                libraries=await asyncio.to_thread(ctx.load, payload["libraries"]),
                rollouts=[self.rollout(i).rollout for i in unit.rollout_ids],
                provider=ctx.provider,
                team=ctx.team,
                task=ctx.task,
            )
            try:
                # The critic reads the group's rollouts: sent where they ran (a router's key).
                with affinity(question_key(unit.question_id)):
                    record = await ctx.method.credit(unit, inputs)
            except CREDIT_FAILURES as failure:
                # A model that cannot fill the schema even after its repair round, or whose
                # request the server refuses (for example a prompt beyond its context), costs
                # this unit its evidence, not the run: recorded here, counted in the report.
                error = f"{type(failure).__name__}: {failure}"
                logger.warning("credit failed on %s: %s", unit.question_id, error)
                record = ctx.method.failed_record(unit, inputs, error)
            await asyncio.to_thread(ctx.credits.append, record)
        ctx.done(payload["iteration"], "critic", unit_id, reused=reused)
        return {"critiques_done": [unit_id]}
