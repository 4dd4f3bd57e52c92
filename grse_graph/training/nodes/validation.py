"""Validation and commit: every library variant (base, and each changed agent's candidate with
the others at base) on V x H, the per-agent gate, and the next iteration's libraries."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send

from grse_graph.errors import GrseError
from grse_graph.methods.gate import PairedDifference, assemble, decide
from grse_graph.methods.utility import bookkeeping

from ..context import TrainingContext
from ..ids import (
    derive_seed,
    validation_ids,
    validation_seed_id,
    validation_unit_id,
    variant_hash,
)
from ..progress import ProgressEvent
from ..records import GateRecord, ValidationRecord
from ..state import TrainingState, ValidationUnit
from .rollouts import execute

BASE_VARIANT = "base"

Variants = dict[str, tuple[dict[str, str], dict[str, str]]]


def variants(state: TrainingState) -> Variants:
    """Library paths and hashes of the base and of each candidate agent's variant."""
    found = {BASE_VARIANT: (dict(state["libraries"]), dict(state["library_hashes"]))}
    for agent, path in state["candidates"].items():
        paths = {**state["libraries"], agent: path}
        hashes = {**state["library_hashes"], agent: state["candidate_hashes"][agent]}
        found[agent] = (paths, hashes)
    return found


class ValidationStage:
    """The `validate` router's Sends, the `validate` node and the `commit` node."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    @property
    def validation_ids(self) -> list[str]:
        """The validation set V (read from the task on use: an empty split fails the stage)."""
        return validation_ids(self.ctx.task, self.ctx.config)

    def send(self, state: TrainingState) -> list[Send]:
        """One Send per (variant, validation question, repeat)."""
        cfg = self.ctx.config
        iteration = state["iteration"]
        sends: list[Send] = []
        for name, (paths, hashes) in variants(state).items():
            vhash = variant_hash(hashes, cfg.validation_sampling)
            for qid in self.validation_ids:
                for h in range(cfg.validation_repeats):
                    unit: ValidationUnit = {
                        "iteration": iteration,
                        "variant": name,
                        "variant_hash": vhash,
                        "question_id": qid,
                        "repeat": h,
                        "unit_id": validation_unit_id(vhash, qid, h),
                        "libraries": paths,
                    }
                    sends.append(Send("validate", unit))
        self.ctx.started(iteration, "validation", len(sends))
        return sends

    async def validate(self, unit: ValidationUnit, config: RunnableConfig) -> dict[str, Any]:
        """One validation execution, reused when the same variant already ran it."""
        ctx, cfg = self.ctx, self.ctx.config
        unit_id = unit["unit_id"]
        reused = ctx.run.validation.get(unit_id) is not None
        if not reused:
            sampling = cfg.validation_sampling
            if sampling.temperature > 0:
                seed_id = validation_seed_id(unit["question_id"], unit["repeat"])
                sampling = sampling.model_copy(update={"seed": derive_seed(cfg.seed, seed_id)})
            result = await execute(
                ctx,
                unit["libraries"],
                unit["question_id"],
                unit_id,
                sampling=sampling,
                group_index=unit["repeat"],
                iteration=unit["iteration"],
                stage="validation",
                parent=config,
            )
            # Written off the event loop (a graph server refuses blocking file I/O on it).
            await asyncio.to_thread(
                ctx.run.validation.append,
                ValidationRecord(
                    iteration=unit["iteration"],
                    unit_id=unit_id,
                    variant=unit["variant"],
                    variant_hash=unit["variant_hash"],
                    question_id=unit["question_id"],
                    repeat=unit["repeat"],
                    reward=result.reward,
                    rollout=result,
                ),
            )
        ctx.done(unit["iteration"], "validation", unit_id, reused=reused)
        return {"validations_done": [unit_id]}

    def question_scores(self, hashes: Mapping[str, str]) -> list[float]:
        """One library variant's mean reward per validation question (over its H repeats), in
        validation order; a failed execution counts 0."""
        cfg, run = self.ctx.config, self.ctx.run
        vhash = variant_hash(hashes, cfg.validation_sampling)
        scores = []
        for qid in self.validation_ids:
            rewards = []
            for h in range(cfg.validation_repeats):
                record = run.validation.get(validation_unit_id(vhash, qid, h))
                if record is None:
                    raise GrseError(f"{run.validation.path}: validation {qid} h{h} is missing")
                rewards.append(record.reward)
            scores.append(sum(rewards) / len(rewards))
        return scores

    def score(self, hashes: Mapping[str, str]) -> float:
        """S(K): the mean validation reward of one library variant over V x H."""
        scores = self.question_scores(hashes)
        return sum(scores) / len(scores)

    def commit(self, state: TrainingState) -> dict[str, Any]:
        """The gate's decisions, the iteration's bookkeeping on the base libraries (kept even
        when a candidate is rejected), and the assembled next libraries."""
        ctx, run = self.ctx, self.ctx.run
        iteration = state["iteration"]
        ctx.started(iteration, "commit", 1)
        record = run.gate.get(str(iteration))
        if record is None:
            table = variants(state)
            base_scores = self.question_scores(table[BASE_VARIANT][1])
            base = sum(base_scores) / len(base_scores)
            per_agent = {a: self.question_scores(table[a][1]) for a in state["candidates"]}
            decisions = decide(
                base,
                {a: sum(scores) / len(scores) for a, scores in per_agent.items()},
                ctx.config.delta,
                {a: PairedDifference.of(base_scores, s) for a, s in per_agent.items()},
            )
            aggregation = ctx.plan_of(iteration).result
            current = bookkeeping(
                ctx.load(state["libraries"]), aggregation, ctx.method.utility_rule()
            )
            next_libraries = assemble(current, ctx.load(state["candidates"]), decisions)
            paths = {
                agent: run.save_library(run.library_dir(iteration, agent), lib)
                for agent, lib in next_libraries.items()
            }
            record = GateRecord(
                iteration=iteration,
                base_score=base,
                validation_questions=len(self.validation_ids),
                validation_repeats=ctx.config.validation_repeats,
                decisions=decisions,
                libraries_before=dict(state["library_hashes"]),
                libraries_after={a: lib.content_hash() for a, lib in next_libraries.items()},
                skills_after={a: lib.names() for a, lib in next_libraries.items()},
                library_paths=paths,
            )
            run.gate.append(record)
        ctx.deps.emit(ProgressEvent(kind="iteration_done", iteration=iteration, stage="commit"))
        summary = {
            "iteration": iteration,
            "base_score": record.base_score,
            "accepted": [d.agent for d in record.decisions if d.accepted],
            "rejected": [d.agent for d in record.decisions if not d.accepted],
        }
        return {
            "iteration": iteration + 1,
            "libraries": record.library_paths,
            "library_hashes": record.libraries_after,
            "candidates": {},
            "candidate_hashes": {},
            "scores": [*state.get("scores", []), summary],
        }
