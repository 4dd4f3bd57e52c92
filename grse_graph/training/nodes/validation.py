"""Validation and commit, by the method's commit policy: under the per-agent gate every library
variant (base, and each changed agent's candidate with the others at base) runs V x H and the
gate decides; under `accept` the candidates are the next libraries (the base runs V x H when
the policy asks); under `keep` (an execution-only round) the libraries stay. The method's state
of the round is committed here, with the base's validation score."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import Send
from pydantic import BaseModel

from grse_graph.errors import GrseError
from grse_graph.methods.gate import GateDecision, PairedDifference, assemble, decide
from grse_graph.methods.rounds import CommitPolicy
from grse_graph.methods.utility import bookkeeping
from grse_graph.skills import SkillLibrary

from ..context import TrainingContext
from ..ids import (
    derive_seed,
    validation_ids,
    validation_seed_id,
    validation_unit_id,
    variant_hash,
)
from ..progress import ProgressEvent
from ..records import AggregateRecord, GateRecord, MethodStateRecord
from ..state import TrainingState, ValidationUnit
from .rollouts import append_unit_record, execute

BASE_VARIANT = "base"

Variants = dict[str, tuple[dict[str, str], dict[str, str]]]


def variants(state: TrainingState, policy: CommitPolicy) -> Variants:
    """Library paths and hashes of the variants the policy validates: the base (unless the
    policy skips validation) and, under the gate, each candidate agent's variant."""
    found: Variants = {}
    if policy.runs_validation:
        found[BASE_VARIANT] = (dict(state["libraries"]), dict(state["library_hashes"]))
    if policy.kind != "gate":
        return found
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

    def policy(self, iteration: int) -> CommitPolicy:
        """The method's commit policy for this iteration."""
        return self.ctx.method.commit_policy(iteration, self.ctx.config.iterations)

    def send(self, state: TrainingState) -> list[Send] | str:
        """One Send per (variant, validation question, repeat); straight on to the commit when
        the policy validates nothing."""
        cfg = self.ctx.config
        iteration = state["iteration"]
        table = variants(state, self.policy(iteration))
        if not table:
            return "commit"
        prior = self.ctx.prior_state(iteration)
        sends: list[Send] = []
        for name, (paths, hashes) in table.items():
            vhash = variant_hash(hashes, cfg.validation_sampling, prior)
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
            await append_unit_record(ctx.run.validation, unit, reward=result.reward, rollout=result)
        ctx.done(unit["iteration"], "validation", unit_id, reused=reused)
        return {"validations_done": [unit_id]}

    def question_scores(
        self, hashes: Mapping[str, str], prior: BaseModel | None = None
    ) -> list[float]:
        """One library variant's mean reward per validation question (over its H repeats), in
        validation order; a failed execution counts 0. `prior`: the method's state the variant
        ran under."""
        cfg, run = self.ctx.config, self.ctx.run
        vhash = variant_hash(hashes, cfg.validation_sampling, prior)
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

    def score(self, hashes: Mapping[str, str], prior: BaseModel | None = None) -> float:
        """S(K): the mean validation reward of one library variant over V x H."""
        scores = self.question_scores(hashes, prior)
        return sum(scores) / len(scores)

    def commit(self, state: TrainingState) -> dict[str, Any]:
        """Commit the round by the method's policy: the gate's decisions (or acceptance), the
        iteration's bookkeeping, the assembled next libraries and the method's state."""
        ctx = self.ctx
        iteration = state["iteration"]
        ctx.started(iteration, "commit", 1)
        policy = self.policy(iteration)
        record = None
        if policy.kind == "keep":
            self.commit_state(state, policy)
        else:
            record = ctx.run.gate.get(str(iteration)) or self.write_commit(state, policy)
        ctx.deps.emit(ProgressEvent(kind="iteration_done", iteration=iteration, stage="commit"))
        if record is None:
            return {"iteration": iteration + 1, "candidates": {}, "candidate_hashes": {}}
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

    def base_score(self, state: TrainingState, policy: CommitPolicy) -> float | None:
        """The base libraries' validation score (None when the policy did not validate)."""
        if not policy.runs_validation:
            return None
        return self.score(state["library_hashes"], self.ctx.prior_state(state["iteration"]))

    def commit_state(self, state: TrainingState, policy: CommitPolicy) -> None:
        """Write the method's state of the round (once; stateless methods write none)."""
        ctx = self.ctx
        iteration = state["iteration"]
        if ctx.method.state_type is None or ctx.run.method_states.get(str(iteration)):
            return
        plan = ctx.plan_of(iteration)
        pending = (
            ctx.method.state_type.model_validate(plan.state) if plan.state is not None else None
        )
        committed = ctx.method.committed_state(pending, self.base_score(state, policy))
        if committed is not None:
            ctx.run.method_states.append(
                MethodStateRecord(
                    iteration=iteration,
                    method=ctx.method.name,
                    state=committed.model_dump(mode="json"),
                )
            )

    def decisions(self, state: TrainingState) -> tuple[float, list[GateDecision]]:
        """The gate: the base score and one decision per candidate agent."""
        table = variants(state, CommitPolicy(kind="gate"))
        prior = self.ctx.prior_state(state["iteration"])
        base_scores = self.question_scores(table[BASE_VARIANT][1], prior)
        per_agent = {a: self.question_scores(table[a][1], prior) for a in state["candidates"]}
        decisions = decide(
            sum(base_scores) / len(base_scores),
            {a: sum(scores) / len(scores) for a, scores in per_agent.items()},
            self.ctx.config.delta,
            {a: PairedDifference.of(base_scores, s) for a, s in per_agent.items()},
        )
        return sum(base_scores) / len(base_scores), decisions

    def next_libraries(
        self, state: TrainingState, plan: AggregateRecord, decisions: list[GateDecision] | None
    ) -> dict[str, SkillLibrary]:
        """The next libraries: under the gate, the base with the iteration's bookkeeping and
        the accepted candidates swapped in (`decisions`); under `accept` (None), the base
        without the removed agents and with every candidate, then the bookkeeping."""
        ctx = self.ctx
        rule = ctx.method.utility_rule()
        current = ctx.load(state["libraries"])
        candidates = ctx.load(state["candidates"])
        if decisions is not None:
            return assemble(bookkeeping(current, plan.result, rule), candidates, decisions)
        record = ctx.run.candidates.get(str(state["iteration"]))
        removed = set(record.removed) if record is not None else set()
        kept = {a: lib for a, lib in current.items() if a not in removed}
        return bookkeeping({**kept, **candidates}, plan.result, rule)

    def write_commit(self, state: TrainingState, policy: CommitPolicy) -> GateRecord:
        """Decide, save the next libraries and the method's state, then the gate record (the
        commit's marker: a resumed commit with it reuses everything)."""
        ctx, run = self.ctx, self.ctx.run
        iteration = state["iteration"]
        plan = ctx.plan_of(iteration)
        if policy.kind == "gate":
            base, decisions = self.decisions(state)
            next_libraries = self.next_libraries(state, plan, decisions)
        else:
            validated = self.base_score(state, policy)
            base = plan.score if plan.score is not None else (validated or 0.0)
            decisions, next_libraries = [], self.next_libraries(state, plan, None)
        paths = {
            agent: run.save_library(run.library_dir(iteration, agent), lib)
            for agent, lib in next_libraries.items()
        }
        self.commit_state(state, policy)
        validated_here = policy.runs_validation
        record = GateRecord(
            iteration=iteration,
            base_score=base,
            validation_questions=len(self.validation_ids) if validated_here else 0,
            validation_repeats=ctx.config.validation_repeats if validated_here else 0,
            decisions=decisions,
            libraries_before=dict(state["library_hashes"]),
            libraries_after={a: lib.content_hash() for a, lib in next_libraries.items()},
            skills_after={a: lib.names() for a, lib in next_libraries.items()},
            library_paths=paths,
        )
        run.gate.append(record)
        return record
