"""Plan, evolve and review: the method's plan from the iteration's credit records, candidate
libraries from the method's operators, and (with `--review`) a person's verdict per change."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from langgraph.types import interrupt

from grse_graph.errors import GrseError
from grse_graph.llm.tokens import CountsTokens
from grse_graph.methods.base import CreditRecord
from grse_graph.methods.operators import (
    MemorisationCheck,
    evolve,
    operator_guidance,
    training_inputs,
)
from grse_graph.methods.operators.consolidate import links_since_consolidation
from grse_graph.methods.operators.schema import EvolutionResult
from grse_graph.methods.rounds import UpdateInputs
from grse_graph.probes.credit import apply_probe_credit
from grse_graph.skills import SkillLibrary
from grse_graph.team.rollout import Rollout

from ..context import TrainingContext
from ..records import (
    AggregateRecord,
    CandidateRecord,
    OperatorLine,
    ProposedLibraries,
    ReviewRecord,
)
from ..review import ReviewAnswer, ReviewRequest, apply_review, proposed_changes
from ..state import TrainingState


def agent_context(ctx: TrainingContext) -> dict[str, str]:
    """Per agent, its role and the task (and category) it serves, for the optimizer."""
    task = ctx.task.name + (f", category {ctx.config.category}" if ctx.config.category else "")
    return {
        agent.name: f"Task: {task}.\nRole of this agent:\n{agent.role.strip()}"
        for agent in ctx.team.agents
    }


def memorisation_check(ctx: TrainingContext, iteration: int) -> MemorisationCheck | None:
    """The memorisation check over the questions the run trained on in iterations 1..t (their
    text, gold answers and passages or conversation); the agents' role and task text and the
    task guidance may be repeated freely. None when the run's `memorisation_check` (a project
    addition) is off. Blocking (renders contexts): run it off the loop."""
    if not ctx.config.memorisation_check:
        return None
    plans = [ctx.plan_of(t).result for t in range(1, iteration + 1)]
    qids = list(dict.fromkeys(q for plan in plans for q in plan.question_ids))
    allowed = [*agent_context(ctx).values(), operator_guidance(ctx.task)]
    inputs = training_inputs(ctx.task, [ctx.question(q) for q in qids], allowed)
    return MemorisationCheck.of(inputs)


class EvolutionStage:
    """The `aggregate`, `evolve` and `review` nodes."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    def round_rollouts(self, records: list[CreditRecord]) -> dict[str, Rollout]:
        """The training rollouts the round's credit records judged, by id (blocking I/O)."""
        wanted = {rid for record in records for rid in record.rollout_ids}
        found = {r.unit_id: r.rollout for r in self.ctx.run.rollouts.read() if r.unit_id in wanted}
        missing = sorted(wanted - set(found))
        if missing:
            raise GrseError(f"{self.ctx.run.rollouts.path}: rollout {missing[0]} is missing")
        return found

    async def plan(self, state: TrainingState) -> dict[str, Any]:
        """The method's round update from every credit record of the iteration (the plan,
        with the iteration's measured skill effects applied when probe credit is on, the state
        to commit, and the libraries the method proposed itself), written as one record."""
        ctx = self.ctx
        iteration = state["iteration"]
        ctx.started(iteration, "aggregate", 1)
        reused = ctx.run.aggregates.get(str(iteration)) is not None
        if not reused:
            records = [r for r in ctx.credits.read() if r.iteration == iteration]
            # Run-folder reads and writes off the event loop (a graph server refuses them).
            libraries = await asyncio.to_thread(ctx.load, state["libraries"])
            update = await ctx.method.update(
                UpdateInputs(
                    iteration=iteration,
                    iterations=ctx.config.iterations,
                    records=records,
                    libraries=libraries,
                    rollouts=await asyncio.to_thread(self.round_rollouts, records),
                    questions=ctx.questions,
                    provider=ctx.provider,
                    team=ctx.team,
                    task=ctx.task,
                    library_limit=ctx.config.library_limit,
                    state=await asyncio.to_thread(ctx.prior_state, iteration),
                )
            )
            result = update.plan
            probe = ctx.run.probe_results.get(str(iteration))
            if probe is not None:
                result = apply_probe_credit(result, probe.result)
            proposed = None
            if update.libraries is not None:
                proposed = await asyncio.to_thread(
                    self.save_proposed, iteration, libraries, update.libraries
                )
            record = AggregateRecord(
                iteration=iteration,
                result=result,
                state=update.state.model_dump(mode="json") if update.state is not None else None,
                score=update.score,
                proposed=proposed,
            )
            await asyncio.to_thread(ctx.run.aggregates.append, record)
        ctx.done(iteration, "aggregate", f"it{iteration}-aggregate", reused=reused)
        return {}

    def save_proposed(
        self,
        iteration: int,
        base: Mapping[str, SkillLibrary],
        libraries: Mapping[str, SkillLibrary],
    ) -> ProposedLibraries:
        """Save the changed (bookkeeping included) and added agents' libraries of a method's
        own update as candidates; the base agents it left out are removed (blocking I/O)."""
        run = self.ctx.run
        proposed = ProposedLibraries(removed=[a for a in base if a not in libraries])
        for agent, library in libraries.items():
            if base.get(agent) == library:
                continue
            path = run.save_library(run.candidate_dir(iteration, agent), library)
            proposed.candidates[agent] = path
            proposed.hashes[agent] = library.content_hash()
        return proposed

    async def evolve(self, state: TrainingState) -> dict[str, Any]:
        """Candidate libraries from the method's operators (changed agents only)."""
        ctx, cfg = self.ctx, self.ctx.config
        iteration = state["iteration"]
        ctx.started(iteration, "evolve", 1)
        existing = ctx.run.candidates.get(str(iteration))
        reused = existing is not None
        proposed = ctx.plan_of(iteration).proposed
        if existing is None and proposed is not None:
            # The method's own update proposed the libraries: no operator runs.
            existing = CandidateRecord(iteration=iteration, **proposed.model_dump())
            await asyncio.to_thread(ctx.run.candidates.append, existing)
        if existing is None:
            spec = ctx.method.evolution()
            result = await evolve(
                await asyncio.to_thread(ctx.load, state["libraries"]),
                links_since_consolidation(
                    ctx.plan_of(iteration).result,
                    iteration,
                    {t: ctx.plan_of(t).result for t in range(1, iteration)},
                    cfg.operator_schedule(),
                ),
                iteration=iteration,
                schedule=cfg.operator_schedule(),
                library_limit=cfg.library_limit,
                provider=ctx.provider,
                settings=spec.settings,
                order=spec.order,
                operators=spec.operators,
                utility_rule=ctx.method.utility_rule(),
                agent_context=agent_context(ctx),
                task_guidance=operator_guidance(ctx.task),
                memorisation=await asyncio.to_thread(memorisation_check, ctx, iteration),
                token_counter=(
                    ctx.provider.token_counter("optimizer")
                    if isinstance(ctx.provider, CountsTokens)
                    else None
                ),
            )
            existing = await asyncio.to_thread(self.save_candidates, iteration, result)
        ctx.done(iteration, "evolve", f"it{iteration}-evolve", reused=reused)
        return {"candidates": existing.candidates, "candidate_hashes": existing.hashes}

    def save_candidates(self, iteration: int, result: EvolutionResult) -> CandidateRecord:
        """Write the changed agents' candidate libraries and the operator records (blocking
        file I/O: the async `evolve` node runs it in a worker thread)."""
        run = self.ctx.run
        candidates: dict[str, str] = {}
        hashes: dict[str, str] = {}
        for agent in result.changed_agents:
            library = result.candidates[agent]
            candidates[agent] = run.save_library(run.candidate_dir(iteration, agent), library)
            hashes[agent] = library.content_hash()
        for op in result.records:
            run.operators.append(OperatorLine(iteration=iteration, record=op))
        record = CandidateRecord(iteration=iteration, candidates=candidates, hashes=hashes)
        run.candidates.append(record)
        return record

    def review(self, state: TrainingState) -> dict[str, Any]:
        """With `review`, one interrupt per proposed skill change; the answers revise the
        candidates (a candidate reverted to its base is dropped)."""
        ctx, run = self.ctx, self.ctx.run
        iteration = state["iteration"]
        if not ctx.config.review or not state["candidates"]:
            return {}
        ctx.started(iteration, "review", 0)
        current = ctx.load(state["libraries"])
        candidates = ctx.load(state["candidates"])
        # One interrupt per proposed skill change; on each resume this node re-runs from the
        # top and earlier interrupts return their recorded answers, so the order is stable.
        answers: list[tuple[ReviewRequest, ReviewAnswer]] = []
        for request in proposed_changes(iteration, current, candidates):
            raw = interrupt(request.model_dump())
            answers.append((request, ReviewAnswer.parse(raw)))
        revised_paths = dict(state["candidates"])
        revised_hashes = dict(state["candidate_hashes"])
        for agent in list(revised_paths):
            mine = [(q, a) for q, a in answers if q.agent == agent]
            revised = apply_review(current[agent], candidates[agent], mine)
            new_hash = revised.content_hash()
            if new_hash == state["library_hashes"][agent]:
                del revised_paths[agent]
                del revised_hashes[agent]
                continue
            path = run.candidate_dir(iteration, agent).with_name(f"{agent}.reviewed")
            revised_paths[agent] = run.save_library(path, revised)
            revised_hashes[agent] = new_hash
        for request, answer in answers:
            run.reviews.append(
                ReviewRecord(
                    iteration=iteration,
                    agent=request.agent,
                    skill=request.skill,
                    change=request.change,
                    verdict=answer.verdict,
                    edited_body=answer.body,
                )
            )
        return {"candidates": revised_paths, "candidate_hashes": revised_hashes}
