"""SkillMAS's round loop as a LangGraph `StateGraph`, from the training package's units.

    setup -> round -(Send per subset question)-> rollout -> traces -(Send per rollout)-> credit
          -> update -> round | report -> END
    (checkpoint=validation: round also Sends one `validate` per validation question/repeat)

Every round executes the same fixed train subset (drawn once, in proportion to category) with
the team and libraries of the current state: per question, the seed agents plus the
specialists targeting its task type (routed specialists take their slot agent's place when the
Q^a softmax picks them, seeded per rollout), each with k selected skills (active and shadow)
and asked to close with a `Skills used:` line. Credit is per rollout (used-skill
attribution); the update is the round's learning, evidence, evolution and restructuring,
written as one `SkillmasState` in RUN/method_state.jsonl, the libraries of every agent in
libraries/iter_<r>, and one `GateRecord` per round (base score = the round's train success
rate, no gate decisions: SkillMAS has no gate). With `measure_final` one more execution-only
round measures the final state. Units found in the run folder are reused, so a resumed run
pays for nothing twice and restores team, tables and pool from the last state record.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypedDict, cast

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph
from langgraph.types import RetryPolicy, Send

from grse_graph.errors import GrseError
from grse_graph.methods.base import (
    CreditInputs,
    CreditMethod,
    CreditRecord,
    CreditUnit,
    PlanInputs,
)
from grse_graph.methods.utility import bookkeeping
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import TaskQuestion
from grse_graph.team import run_rollout
from grse_graph.team.spec import TeamSpec
from grse_graph.training.context import TrainingContext
from grse_graph.training.ids import derive_seed, rollout_unit_id, validation_ids
from grse_graph.training.nodes.credit import CREDIT_FAILURES
from grse_graph.training.nodes.rollouts import isolated
from grse_graph.training.progress import ProgressEvent
from grse_graph.training.records import (
    AggregateRecord,
    GateRecord,
    MethodStateRecord,
    RolloutRecord,
    ValidationRecord,
)
from grse_graph.training.report import write_report
from grse_graph.training.state import RESET, units

from .method import SkillmasMethod, SkillmasRecord
from .round import measurement, update_round
from .routing import route
from .selection import select_skills
from .skills import lineage_id, lineage_map
from .state import SkillmasState
from .team import build_team, running_members, seed_members
from .trace import SKILLS_USED_LINE, task_type_of

USED_LINE_REQUEST = (
    f"After your response, add one last line `{SKILLS_USED_LINE} <names of the skills above "
    "that you followed, comma-separated, or none>`."
)


class SkillmasLoopState(TypedDict, total=False):
    """The loop's state: small values only (everything else is in the run folder)."""

    iteration: int
    libraries: dict[str, str]
    library_hashes: dict[str, str]
    batch: list[str]
    rollouts_done: Annotated[list[str], units]
    critiques_done: Annotated[list[str], units]
    scores: list[dict[str, Any]]


class RoundRollout(TypedDict):
    iteration: int
    question_id: str
    unit_id: str
    seed: int
    libraries: dict[str, str]
    library_hashes: dict[str, str]


class RoundValidation(TypedDict):
    iteration: int
    question_id: str
    repeat: int
    unit_id: str
    libraries: dict[str, str]


class RoundCredit(TypedDict):
    iteration: int
    question_id: str
    unit_id: str
    rollout_id: str
    libraries: dict[str, str]


def fixed_subset(questions: Sequence[TaskQuestion], size: int, seed: int) -> list[str]:
    """`size` train questions drawn once in proportion to category (largest remainder), in
    split order."""
    if not questions:
        raise GrseError("skillmas: the train split is empty")
    size = min(size, len(questions))
    by_category: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        by_category.setdefault(str(q.category), []).append(i)
    quotas = {c: size * len(ix) / len(questions) for c, ix in by_category.items()}
    counts = {c: int(v) for c, v in quotas.items()}
    for c in sorted(quotas, key=lambda c: -(quotas[c] - counts[c]))[: size - sum(counts.values())]:
        counts[c] += 1
    rng = random.Random(f"skillmas-subset:{seed}")
    chosen = {i for c, ix in sorted(by_category.items()) for i in rng.sample(ix, counts[c])}
    return [q.id for i, q in enumerate(questions) if i in chosen]


def select_libraries(
    state: SkillmasState,
    libraries: Mapping[str, SkillLibrary],
    question: TaskQuestion,
    task_type: str,
    k: int,
    training: bool,
    routed: Mapping[str, str] | None = None,
) -> dict[str, SkillLibrary]:
    """Each running agent's k selected skills (shadow skills offered in training only);
    `routed` names the routed specialists that run in place of their slot agents."""
    out = {}
    for member in running_members(state.members, task_type, routed):
        library = libraries.get(member.name, SkillLibrary.empty(member.name))
        offered = [
            s
            for s in library.skills
            if state.status_of(member.name, s.name) == "active"
            or (training and state.status_of(member.name, s.name) == "shadow")
        ]
        chosen = select_skills(
            offered,
            query=f"{task_type} {question.question}",
            task_type=task_type,
            agent=member.name,
            table=state.skills,
            k=k,
            lineage=lineage_map(library),
        )
        names = {c.name for c in chosen}
        out[member.name] = SkillLibrary.build(
            member.name, [s for s in offered if s.name in names], library.limit
        )
    return out


class SkillmasLoop:
    """The nodes and routers of the SkillMAS round loop."""

    def __init__(self, ctx: TrainingContext, method: SkillmasMethod) -> None:
        self.ctx = ctx
        self.method = method
        self.settings = method.settings

    # -- state -----------------------------------------------------------------------------

    def states(self) -> list[SkillmasState]:
        return [SkillmasState.model_validate(r.state) for r in self.ctx.run.method_states.read()]

    def state_before(self, iteration: int) -> SkillmasState:
        """X_r: the state written by the latest earlier round (setup writes round 0)."""
        earlier = [r for r in self.ctx.run.method_states.read() if r.iteration < iteration]
        if not earlier:
            raise GrseError(
                f"{self.ctx.run.method_states.path}: no SkillMAS state before {iteration}"
            )
        return SkillmasState.model_validate(earlier[-1].state)

    def task_type(self, question: TaskQuestion) -> str:
        return task_type_of(question.category, self.settings.task_type)

    def team_for(
        self,
        state: SkillmasState,
        libraries: Mapping[str, SkillLibrary],
        question: TaskQuestion,
        training: bool = True,
        route_seed: int | None = None,
    ) -> TeamSpec:
        """The team that runs `question` in a round of `state`: routed specialists are sampled
        (seeded by `route_seed`) in training and the most probable one runs otherwise."""
        tau = self.task_type(question)
        rng = random.Random(route_seed) if training and route_seed is not None else None
        routed = route(state.members, state.executors, tau, self.settings.route_temperature, rng)
        selected = select_libraries(
            state, libraries, question, tau, self.settings.k, training, routed
        )
        return build_team(self.ctx.team, state.members, selected, tau, USED_LINE_REQUEST, routed)

    def save_state(self, state: SkillmasState) -> None:
        self.ctx.run.method_states.append(
            MethodStateRecord(
                iteration=state.iteration,
                method=self.method.name,
                state=state.model_dump(mode="json"),
            )
        )

    # -- nodes -----------------------------------------------------------------------------

    def setup(self, state: SkillmasLoopState) -> dict[str, Any]:
        """Iteration-0 libraries of the seed agents and the initial state (tables with a
        record per starting skill, the seed team, the fixed subset)."""
        if state.get("libraries"):
            return {}
        ctx, cfg = self.ctx, self.ctx.config
        if not ctx.run.exists():
            ctx.run.write_config(cfg)
        ctx.started(0, "setup")
        initial = ctx.deps.starting_libraries()
        paths, hashes = {}, {}
        for agent in ctx.team.agent_names:
            lib = initial.get(agent) or SkillLibrary.empty(agent, cfg.library_limit)
            paths[agent] = ctx.run.save_library(ctx.run.library_dir(0, agent), lib)
            hashes[agent] = lib.content_hash()
        start = ctx.run.method_states.get("0")
        if start is None:
            subset = fixed_subset(list(ctx.task.split("train")), cfg.batch_size, cfg.seed)
            x0 = SkillmasState(members=seed_members(ctx.team), subset=subset)
            for agent, lib in initial.items():
                for skill in lib.skills:
                    x0 = x0.model_copy(
                        update={"skills": x0.skills.initialize(lineage_id(skill, agent))}
                    )
            for agent in ctx.team.agent_names:
                x0 = x0.model_copy(update={"executors": x0.executors.initialize(agent)})
            self.save_state(x0)
        else:
            x0 = SkillmasState.model_validate(start.state)
        return {
            "iteration": 1,
            "libraries": paths,
            "library_hashes": hashes,
            "batch": list(x0.subset),
            "scores": [],
        }

    def start_round(self, state: SkillmasLoopState) -> dict[str, Any]:
        self.ctx.started(state["iteration"], "rollouts", len(state["batch"]))
        return {"rollouts_done": [RESET], "critiques_done": [RESET]}

    def send_rollouts(self, state: SkillmasLoopState) -> list[Send]:
        """One Send per subset question (and, with checkpoint=validation, per validation
        question and repeat)."""
        it = state["iteration"]
        sends = []
        if self.settings.checkpoint == "validation":
            for qid in validation_ids(self.ctx.task, self.ctx.config):
                for h in range(self.ctx.config.validation_repeats):
                    check: RoundValidation = {
                        "iteration": it,
                        "question_id": qid,
                        "repeat": h,
                        "unit_id": f"it{it}-{qid}-val-h{h}",
                        "libraries": state["libraries"],
                    }
                    sends.append(Send("validate", check))
        for qid in state["batch"]:
            unit_id = rollout_unit_id(it, qid, 0)
            unit: RoundRollout = {
                "iteration": it,
                "question_id": qid,
                "unit_id": unit_id,
                "seed": derive_seed(self.ctx.config.seed, unit_id),
                "libraries": state["libraries"],
                "library_hashes": state["library_hashes"],
            }
            sends.append(Send("rollout", unit))
        return sends

    async def rollout(self, unit: RoundRollout, config: RunnableConfig) -> dict[str, Any]:
        """One question executed by the round's team (reused when recorded)."""
        ctx, cfg = self.ctx, self.ctx.config
        unit_id = unit["unit_id"]
        reused = ctx.run.rollouts.get(unit_id) is not None
        if not reused:
            x = await asyncio.to_thread(self.state_before, unit["iteration"])
            libraries = await asyncio.to_thread(ctx.load, unit["libraries"])
            question = ctx.question(unit["question_id"])
            team = self.team_for(
                x, libraries, question, route_seed=derive_seed(cfg.seed, f"{unit_id}/route")
            )
            result = await isolated(
                run_rollout(
                    team,
                    ctx.task,
                    question,
                    ctx.provider,
                    sampling=cfg.training_sampling.model_copy(update={"seed": unit["seed"]}),
                    rollout_id=unit_id,
                    metadata={"iteration": unit["iteration"], "stage": "rollouts"},
                    max_tokens=cfg.actor_max_tokens,
                    parent=config,
                )
            )
            record = RolloutRecord(
                iteration=unit["iteration"],
                unit_id=unit_id,
                question_id=unit["question_id"],
                group_index=0,
                seed=unit["seed"],
                library_hashes=unit["library_hashes"],
                rollout=result,
            )
            await asyncio.to_thread(ctx.run.rollouts.append, record)
        ctx.done(unit["iteration"], "rollouts", unit_id, reused=reused)
        return {"rollouts_done": [unit_id]}

    async def validate(self, unit: RoundValidation, config: RunnableConfig) -> dict[str, Any]:
        """X_r on one validation question: active skills only, validation sampling."""
        ctx, cfg = self.ctx, self.ctx.config
        unit_id = unit["unit_id"]
        reused = ctx.run.validation.get(unit_id) is not None
        if not reused:
            x = await asyncio.to_thread(self.state_before, unit["iteration"])
            libraries = await asyncio.to_thread(ctx.load, unit["libraries"])
            question = ctx.question(unit["question_id"])
            sampling = cfg.validation_sampling
            if sampling.temperature > 0:
                sampling = sampling.model_copy(update={"seed": derive_seed(cfg.seed, unit_id)})
            result = await isolated(
                run_rollout(
                    self.team_for(x, libraries, question, training=False),
                    ctx.task,
                    question,
                    ctx.provider,
                    sampling=sampling,
                    rollout_id=unit_id,
                    group_index=unit["repeat"],
                    metadata={"iteration": unit["iteration"], "stage": "validation"},
                    max_tokens=cfg.actor_max_tokens,
                    parent=config,
                )
            )
            record = ValidationRecord(
                iteration=unit["iteration"],
                unit_id=unit_id,
                variant=f"round-{unit['iteration']}",
                variant_hash="",
                question_id=question.id,
                repeat=unit["repeat"],
                reward=result.reward,
                rollout=result,
            )
            await asyncio.to_thread(ctx.run.validation.append, record)
        ctx.done(unit["iteration"], "validation", unit_id, reused=reused)
        return {}

    def validation_score(self, iteration: int) -> float | None:
        """Mean validation reward of round `iteration`'s state (None without validation)."""
        rewards = [r.reward for r in self.ctx.run.validation.read() if r.iteration == iteration]
        return sum(rewards) / len(rewards) if rewards else None

    def with_validation(self, state: SkillmasState, iteration: int) -> SkillmasState:
        if state.round is None:
            return state
        score = self.validation_score(iteration)
        return state.model_copy(
            update={"round": state.round.model_copy(update={"validation_score": score})}
        )

    def traces(self, state: SkillmasLoopState) -> dict[str, Any]:
        self.ctx.started(state["iteration"], "critic", len(state["batch"]))
        return {}

    def send_credits(self, state: SkillmasLoopState) -> list[Send]:
        it = state["iteration"]
        sends = []
        for qid in state["batch"]:
            rid = rollout_unit_id(it, qid, 0)
            payload: RoundCredit = {
                "iteration": it,
                "question_id": qid,
                "unit_id": f"{rid}-credit",
                "rollout_id": rid,
                "libraries": state["libraries"],
            }
            sends.append(Send("credit", payload))
        return sends

    async def credit(self, payload: RoundCredit) -> dict[str, Any]:
        """Used-skill attribution of one rollout (judge calls included), reused when recorded."""
        ctx = self.ctx
        unit_id = payload["unit_id"]
        reused = ctx.credits.get(unit_id) is not None
        if not reused:
            record = ctx.run.rollouts.get(payload["rollout_id"])
            if record is None:
                raise GrseError(
                    f"{ctx.run.rollouts.path}: rollout {payload['rollout_id']} is missing"
                )
            question = ctx.question(payload["question_id"])
            unit = CreditUnit(
                unit_id=unit_id, question_id=question.id, rollout_ids=[record.unit_id]
            )
            inputs = CreditInputs(
                iteration=payload["iteration"],
                question=question,
                libraries=await asyncio.to_thread(ctx.load, payload["libraries"]),
                rollouts=[record.rollout],
                provider=ctx.provider,
                team=ctx.team,
                task=ctx.task,
            )
            credit: CreditRecord
            try:
                credit = await self.method.credit(unit, inputs)
            except CREDIT_FAILURES as failure:
                credit = self.method.failed_record(
                    unit, inputs, f"{type(failure).__name__}: {failure}"
                )
            await asyncio.to_thread(ctx.credits.append, credit)
        ctx.done(payload["iteration"], "critic", unit_id, reused=reused)
        return {"critiques_done": [unit_id]}

    async def update(self, state: SkillmasLoopState) -> dict[str, Any]:
        """The round update (or the final measurement), written once: libraries/iter_<r>,
        the state record and the round's GateRecord."""
        ctx, cfg = self.ctx, self.ctx.config
        it = state["iteration"]
        ctx.started(it, "aggregate", 1)
        gate = ctx.run.gate.get(str(it))
        measuring = it > cfg.iterations
        if measuring and ctx.run.method_states.get(str(it)) is None:
            x = self.state_before(it)
            records = self.records(it)
            measured = measurement(x, it, [r.trace for r in records if r.trace])
            await asyncio.to_thread(self.save_state, self.with_validation(measured, it))
        if not measuring and gate is None:
            gate = await self.round_update(state)
        ctx.deps.emit(ProgressEvent(kind="iteration_done", iteration=it, stage="commit"))
        if gate is None:
            return {"iteration": it + 1}
        summary = {"iteration": it, "base_score": gate.base_score, "accepted": [], "rejected": []}
        return {
            "iteration": it + 1,
            "libraries": gate.library_paths,
            "library_hashes": gate.libraries_after,
            "scores": [*state.get("scores", []), summary],
        }

    def records(self, iteration: int) -> list[SkillmasRecord]:
        return [
            r
            for r in self.ctx.credits.read()
            if r.iteration == iteration and isinstance(r, SkillmasRecord)
        ]

    async def round_update(self, state: SkillmasLoopState) -> GateRecord:
        ctx, cfg, run = self.ctx, self.ctx.config, self.ctx.run
        it = state["iteration"]
        x = await asyncio.to_thread(self.state_before, it)
        records = await asyncio.to_thread(self.records, it)
        traces = [r.trace for r in records if r.trace is not None]
        libraries = await asyncio.to_thread(ctx.load, state["libraries"])
        rollouts = {}
        for r in records:
            for rid in r.rollout_ids:
                found = run.rollouts.get(rid)
                if found is not None:
                    rollouts[rid] = found.rollout
        gold = {r.question_id: ctx.question(r.question_id).answer for r in records}
        outcome = await update_round(
            x,
            iteration=it,
            traces=traces,
            judge_calls=sum(r.judge_calls for r in records),
            libraries=libraries,
            rollouts=rollouts,
            gold=gold,
            provider=ctx.provider,
            settings=self.settings,
            library_limit=cfg.library_limit,
            seed_roles={a.name: a.role for a in ctx.team.agents},
            domain=f"a question-answering agent team ({ctx.task.name})",
        )

        # The plan is the round's used-skill counts; they become each skill's invocation count
        # (bookkeeping metadata, content hashes unchanged).
        plan = await self.method.plan(
            records,
            libraries,
            PlanInputs(iteration=it, provider=ctx.provider, team=ctx.team, state=x),
        )
        counted = bookkeeping(outcome.libraries, plan, self.method.utility_rule())

        def write() -> GateRecord:
            run.aggregates.append(AggregateRecord(iteration=it, result=plan))
            paths = {
                agent: run.save_library(run.library_dir(it, agent), lib)
                for agent, lib in counted.items()
            }
            self.save_state(self.with_validation(outcome.state, it))
            record = GateRecord(
                iteration=it,
                base_score=outcome.state.round.success_rate if outcome.state.round else 0.0,
                validation_questions=0,
                validation_repeats=0,
                decisions=[],
                libraries_before=dict(state["library_hashes"]),
                libraries_after={a: lib.content_hash() for a, lib in counted.items()},
                skills_after={a: lib.names() for a, lib in counted.items()},
                library_paths=paths,
            )
            run.gate.append(record)
            return record

        return await asyncio.to_thread(write)

    def next_step(self, state: SkillmasLoopState) -> str:
        last = self.ctx.config.iterations + (1 if self.settings.measure_final else 0)
        return "report" if state["iteration"] > last else "round"

    def report(self, state: SkillmasLoopState) -> dict[str, Any]:
        ctx = self.ctx
        ctx.started(state["iteration"] - 1, "report", 1)
        if ctx.deps.usage is not None:
            ctx.run.write_usage(ctx.deps.usage())
        reporting = cast(CreditMethod, self.method.with_states(self.states()))
        write_report(ctx.run, reporting)
        ctx.deps.emit(
            ProgressEvent(kind="run_done", iteration=state["iteration"] - 1, stage="report")
        )
        return {}


def build_skillmas_graph(ctx: TrainingContext, method: SkillmasMethod) -> StateGraph:
    """The uncompiled SkillMAS round loop (compiled and run by `grse_graph.training`)."""
    loop = SkillmasLoop(ctx, method)
    retry = RetryPolicy(max_attempts=ctx.config.max_attempts)
    builder = StateGraph(SkillmasLoopState)
    builder.add_node("setup", loop.setup)
    builder.add_node("round", loop.start_round)
    builder.add_node("rollout", loop.rollout, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("validate", loop.validate, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("traces", loop.traces)
    builder.add_node("credit", loop.credit, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("update", loop.update, retry_policy=retry)
    builder.add_node("report", loop.report)
    builder.set_entry_point("setup")
    builder.add_edge("setup", "round")
    builder.add_conditional_edges("round", loop.send_rollouts, ["rollout", "validate"])
    builder.add_edge("rollout", "traces")
    builder.add_edge("validate", "traces")
    builder.add_conditional_edges("traces", loop.send_credits, ["credit"])
    builder.add_edge("credit", "update")
    builder.add_conditional_edges("update", loop.next_step, ["round", "report"])
    builder.add_edge("report", END)
    return builder
