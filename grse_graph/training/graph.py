"""The GRSE training loop as a LangGraph `StateGraph`.

    setup -> sample_batch -(Send per (question, g))-> rollout -> groups
          -(Send per kept question)-> critic -> aggregate -> evolve -> review
          -(Send per (variant, question, h))-> validate -> commit -> sample_batch | report -> END

The state stays small and JSON-serialisable: ids, scores, library paths and content hashes.
Rollouts, critiques and every other artifact live in the run folder, keyed by a deterministic
unit id; a unit found there is reused, so a resumed run never pays for a finished rollout,
critic call or validation execution twice (LangGraph's pending writes already cover the Send
tasks that finished in the superstep that failed; the run folder also covers work whose
checkpoint was never written). The first rollout of a group to start makes the first agent's
first call once with n=G for all its siblings (`GroupOpenings`, stored in openings.jsonl).
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import logging
import random
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict, TypeVar

import openai
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy, Send, interrupt

from grse_graph.errors import GrseError, StructuredOutputError
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.methods.gate import assemble, decide
from grse_graph.methods.grse.advantages import group_advantages, keep_group
from grse_graph.methods.grse.aggregate import aggregate
from grse_graph.methods.grse.critic import GroupCritic
from grse_graph.methods.grse.schema import CritiqueResult
from grse_graph.methods.operators import evolve, record_utilities
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team import PresampledReply, TeamSpec, default_team, run_rollout, sample_openings
from grse_graph.team.rollout import Rollout

from .config import TrainConfig
from .openings import GroupOpenings
from .progress import ProgressCallback, ProgressEvent, Stage
from .records import (
    AggregateRecord,
    CandidateRecord,
    CritiqueRecord,
    GateRecord,
    OpeningRecord,
    OperatorLine,
    ReviewRecord,
    RolloutRecord,
    ValidationRecord,
)
from .report import write_report
from .review import ReviewAnswer, ReviewRequest, apply_review, proposed_changes
from .run_folder import RunFolder

T = TypeVar("T")
logger = logging.getLogger(__name__)

RESET = "__reset__"
BASE_VARIANT = "base"


def units(left: list[str] | None, right: list[str] | None) -> list[str]:
    """Reducer of finished unit ids: appends; a list starting with RESET starts over."""
    if right and right[0] == RESET:
        return list(right[1:])
    return [*(left or []), *(right or [])]


class TrainingState(TypedDict, total=False):
    """The loop's state: small, serialisable values only.

    `libraries` maps each agent to its current library folder (relative to the run folder) and
    `library_hashes` to its content hash; `candidates` likewise for the agents whose library
    the evolve stage changed in this iteration.
    """

    iteration: int
    libraries: dict[str, str]
    library_hashes: dict[str, str]
    batch: list[str]
    candidates: dict[str, str]
    candidate_hashes: dict[str, str]
    rollouts_done: Annotated[list[str], units]
    critiques_done: Annotated[list[str], units]
    validations_done: Annotated[list[str], units]
    scores: list[dict[str, Any]]


class RolloutUnit(TypedDict):
    """The input of one `rollout` Send task."""

    iteration: int
    question_id: str
    group_index: int
    seed: int
    unit_id: str
    libraries: dict[str, str]
    library_hashes: dict[str, str]


class CriticUnit(TypedDict):
    """The input of one `critic` Send task (one question's group)."""

    iteration: int
    question_id: str
    unit_id: str
    rollout_ids: list[str]
    libraries: dict[str, str]


class ValidationUnit(TypedDict):
    """The input of one `validate` Send task."""

    iteration: int
    variant: str
    variant_hash: str
    question_id: str
    repeat: int
    unit_id: str
    libraries: dict[str, str]


@dataclass(frozen=True)
class TrainingDeps:
    """Everything the training graph needs, passed explicitly.

    `team` defaults to the task's `default_team`; `initial_libraries` to empty libraries.
    `usage` returns the current per-role accounting (written to usage.json by the report
    node); `on_progress` receives progress events.
    """

    task: Task
    provider: ChatModelProvider
    config: TrainConfig
    run: RunFolder
    team: TeamSpec | None = None
    initial_libraries: Mapping[str, SkillLibrary] | None = None
    on_progress: ProgressCallback | None = None
    usage: Callable[[], dict[str, Any]] | None = None

    def team_spec(self) -> TeamSpec:
        """The team whose libraries are trained."""
        if self.team is not None:
            return self.team
        return default_team(self.task, skill_mode=self.config.skill_mode)

    def emit(self, event: ProgressEvent) -> None:
        """Send a progress event to the callback, if any."""
        if self.on_progress is not None:
            self.on_progress(event)


# -- ids and seeds ---------------------------------------------------------------------------


def rollout_unit_id(iteration: int, question_id: str, group_index: int) -> str:
    """Id of training rollout g of a question in an iteration."""
    return f"it{iteration}-{question_id}-g{group_index}"


def opening_unit_id(iteration: int, question_id: str) -> str:
    """Id of the first agent's n=G call for one question's group in an iteration."""
    return f"it{iteration}-{question_id}-opening"


def critic_unit_id(iteration: int, question_id: str) -> str:
    """Id of the critic call for one question's group in an iteration."""
    return f"it{iteration}-{question_id}-critic"


def validation_unit_id(variant_hash: str, question_id: str, repeat: int) -> str:
    """Id of one validation execution. Keyed by the libraries' content, not the iteration:
    the same libraries on the same question and repeat are the same execution."""
    return f"val-{variant_hash[:16]}-{question_id}-h{repeat}"


def derive_seed(base: int, unit_id: str) -> int:
    """A distinct, reproducible sampling seed per unit."""
    digest = hashlib.sha256(f"{base}:{unit_id}".encode()).hexdigest()
    return int(digest[:8], 16)


def variant_hash(hashes: Mapping[str, str], sampling: SamplingSettings) -> str:
    """Content hash of a library combination plus the decoding settings it is scored with."""
    text = "|".join(f"{a}={h}" for a, h in sorted(hashes.items()))
    text += "|" + sampling.model_dump_json(exclude={"seed"})
    return hashlib.sha256(text.encode()).hexdigest()


# -- question sets ---------------------------------------------------------------------------


def sample_batch_ids(task: Task, config: TrainConfig, iteration: int) -> list[str]:
    """The iteration's training batch: a reproducible sample, kept in split order."""
    train = list(task.split("train"))
    if not train:
        raise GrseError(f"task {task.name}: the train split is empty")
    rng = random.Random(f"{config.seed}:{iteration}")
    chosen = set(rng.sample(range(len(train)), min(config.batch_size, len(train))))
    return [q.id for i, q in enumerate(train) if i in chosen]


def validation_ids(task: Task, config: TrainConfig) -> list[str]:
    """The validation set V: the first `validation_size` questions of the validation split."""
    questions = list(task.split("validation"))
    if not questions:
        raise GrseError(f"task {task.name}: the validation split is empty")
    size = config.validation_size or len(questions)
    return [q.id for q in questions[:size]]


def _questions(task: Task) -> dict[str, TaskQuestion]:
    found: dict[str, TaskQuestion] = {}
    for split in ("train", "validation"):
        for q in task.split(split):
            found[q.id] = q
    return found


async def isolated(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await a team execution outside the training graph's run context.

    Inside a node, a nested graph inherits the training checkpointer and checkpoints every
    team step as a subgraph: hundreds of kilobytes per rollout and pickled task objects in the
    checkpoint database. The run folder already keys each finished rollout, so the team runs
    as its own root run (its metadata names the iteration, question and rollout).
    """
    return await asyncio.create_task(coroutine, context=contextvars.Context())


def recursion_limit(config: TrainConfig) -> int:
    """Supersteps the loop needs: 9 per iteration plus setup and report, with slack."""
    return 12 * config.iterations + 10


# -- the graph -------------------------------------------------------------------------------


def build_training_graph(deps: TrainingDeps) -> StateGraph:
    """The training loop as an uncompiled `StateGraph` over `TrainingState`.

    Compile it with a checkpointer for resumable runs (the CLI uses SQLite in the run folder)
    or without one for `langgraph dev`; run it with `training_run_config(config)` so the
    recursion limit and the concurrency bound are set.
    """
    cfg = deps.config
    run = deps.run
    questions = _questions(deps.task)
    team = deps.team_spec()
    agent_names = team.agent_names

    def load(libraries: Mapping[str, str]) -> dict[str, SkillLibrary]:
        return {
            agent: run.load_library(path, agent, cfg.library_limit)
            for agent, path in libraries.items()
        }

    def question(qid: str) -> TaskQuestion:
        try:
            return questions[qid]
        except KeyError:
            raise GrseError(f"task {deps.task.name}: no question with id {qid!r}") from None

    def started(iteration: int, stage: Stage, total: int = 0) -> None:
        deps.emit(
            ProgressEvent(kind="stage_started", iteration=iteration, stage=stage, total=total)
        )

    def done(iteration: int, stage: Stage, unit_id: str, reused: bool) -> None:
        deps.emit(
            ProgressEvent(
                kind="unit_done", iteration=iteration, stage=stage, unit_id=unit_id, reused=reused
            )
        )

    # -- setup and batch --------------------------------------------------------------------

    def setup(state: TrainingState) -> dict[str, Any]:
        if state.get("libraries"):
            return {}
        if not run.exists():
            run.write_config(cfg)
        started(0, "setup")
        initial = dict(deps.initial_libraries or {})
        libraries: dict[str, str] = {}
        hashes: dict[str, str] = {}
        for agent in agent_names:
            lib = initial.get(agent) or SkillLibrary(
                agent=agent, skills=[], limit=cfg.library_limit
            )
            libraries[agent] = run.save_library(run.library_dir(0, agent), lib)
            hashes[agent] = lib.content_hash()
        return {"iteration": 1, "libraries": libraries, "library_hashes": hashes, "scores": []}

    def sample_batch(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        batch = sample_batch_ids(deps.task, cfg, iteration)
        started(iteration, "rollouts", len(batch) * cfg.group_size)
        return {
            "batch": batch,
            "candidates": {},
            "candidate_hashes": {},
            "rollouts_done": [RESET],
            "critiques_done": [RESET],
            "validations_done": [RESET],
        }

    def send_rollouts(state: TrainingState) -> list[Send]:
        iteration = state["iteration"]
        sends = []
        # Question-major order: a group's G rollouts are queued together, so the engine sees
        # the shared prompt prefix back to back and serves it from its prefix cache.
        for qid, g in question_order(state["batch"], cfg.group_size):
            unit_id = rollout_unit_id(iteration, qid, g)
            unit: RolloutUnit = {
                "iteration": iteration,
                "question_id": qid,
                "group_index": g,
                "seed": derive_seed(cfg.seed, unit_id),
                "unit_id": unit_id,
                "libraries": state["libraries"],
                "library_hashes": state["library_hashes"],
            }
            sends.append(Send("rollout", unit))
        return sends

    async def execute(
        libraries: Mapping[str, str],
        question_id: str,
        unit_id: str,
        *,
        sampling: SamplingSettings,
        group_index: int,
        iteration: int,
        stage: Stage,
        opening: PresampledReply | None = None,
    ) -> Rollout:
        """One team execution under the given libraries (a training or validation unit)."""
        return await isolated(
            run_rollout(
                team.with_libraries(load(libraries)),
                deps.task,
                question(question_id),
                deps.provider,
                sampling=sampling,
                rollout_id=unit_id,
                group_index=group_index,
                metadata={"iteration": iteration, "stage": stage},
                max_tokens=cfg.actor_max_tokens,
                opening=opening,
            )
        )

    openings = GroupOpenings(run.openings)

    async def sample_group_opening(unit: RolloutUnit) -> OpeningRecord:
        opening_id = opening_unit_id(unit["iteration"], unit["question_id"])
        replies = await isolated(
            sample_openings(
                team.with_libraries(load(unit["libraries"])),
                deps.task,
                question(unit["question_id"]),
                deps.provider,
                sampling=cfg.training_sampling.model_copy(
                    update={"seed": derive_seed(cfg.seed, opening_id)}
                ),
                n=cfg.group_size,
                metadata={"iteration": unit["iteration"], "stage": "rollouts"},
                max_tokens=cfg.actor_max_tokens,
            )
        )
        return OpeningRecord(
            iteration=unit["iteration"],
            unit_id=opening_id,
            question_id=unit["question_id"],
            requested=cfg.group_size,
            library_hashes=unit["library_hashes"],
            replies=replies,
        )

    def group_started(unit: RolloutUnit) -> bool:
        """Whether a rollout of the unit's group is already recorded (then n=G would waste)."""
        it, qid = unit["iteration"], unit["question_id"]
        return any(
            run.rollouts.get(rollout_unit_id(it, qid, g)) is not None for g in range(cfg.group_size)
        )

    async def rollout(unit: RolloutUnit) -> dict[str, Any]:
        unit_id = unit["unit_id"]
        if run.rollouts.get(unit_id) is None:
            opening = None
            if cfg.first_agent_n and cfg.group_size > 1:
                opening = await openings.reply_for(
                    opening_unit_id(unit["iteration"], unit["question_id"]),
                    unit["group_index"],
                    lambda: sample_group_opening(unit),
                    may_sample=not group_started(unit),
                )
            result = await execute(
                unit["libraries"],
                unit["question_id"],
                unit_id,
                sampling=cfg.training_sampling.model_copy(update={"seed": unit["seed"]}),
                group_index=unit["group_index"],
                iteration=unit["iteration"],
                stage="rollouts",
                opening=opening,
            )
            run.rollouts.append(
                RolloutRecord(
                    iteration=unit["iteration"],
                    unit_id=unit_id,
                    question_id=unit["question_id"],
                    group_index=unit["group_index"],
                    seed=unit["seed"],
                    library_hashes=unit["library_hashes"],
                    rollout=result,
                )
            )
            done(unit["iteration"], "rollouts", unit_id, reused=False)
        else:
            done(unit["iteration"], "rollouts", unit_id, reused=True)
        return {"rollouts_done": [unit_id]}

    # -- groups and critic ------------------------------------------------------------------

    def groups(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        kept = 0
        for qid in state["batch"]:
            ids = [rollout_unit_id(iteration, qid, g) for g in range(cfg.group_size)]
            rewards = [_rollout(i).rollout.reward for i in ids]
            if keep_group(rewards, cfg.dapo_filter, cfg.eps):
                kept += 1
                continue
            unit_id = critic_unit_id(iteration, qid)
            if run.critiques.get(unit_id) is None:
                run.critiques.append(
                    CritiqueRecord(
                        iteration=iteration,
                        unit_id=unit_id,
                        question_id=qid,
                        rollout_ids=ids,
                        rewards=rewards,
                        advantages=group_advantages(rewards, cfg.eps),
                        kept=False,
                    )
                )
        started(iteration, "critic", kept)
        return {}

    def _rollout(unit_id: str) -> RolloutRecord:
        record = run.rollouts.get(unit_id)
        if record is None:
            raise GrseError(f"{run.rollouts.path}: rollout {unit_id} is missing")
        return record

    def send_critics(state: TrainingState) -> list[Send] | str:
        iteration = state["iteration"]
        sends: list[Send] = []
        for qid in state["batch"]:
            ids = [rollout_unit_id(iteration, qid, g) for g in range(cfg.group_size)]
            rewards = [_rollout(i).rollout.reward for i in ids]
            if not keep_group(rewards, cfg.dapo_filter, cfg.eps):
                continue
            unit: CriticUnit = {
                "iteration": iteration,
                "question_id": qid,
                "unit_id": critic_unit_id(iteration, qid),
                "rollout_ids": ids,
                "libraries": state["libraries"],
            }
            sends.append(Send("critic", unit))
        return sends or "aggregate"

    async def critic(unit: CriticUnit) -> dict[str, Any]:
        unit_id = unit["unit_id"]
        reused = run.critiques.get(unit_id) is not None
        if not reused:
            rollouts = [_rollout(i).rollout for i in unit["rollout_ids"]]
            rewards = [r.reward for r in rollouts]
            advantages = group_advantages(rewards, cfg.eps)
            group_critic = GroupCritic(
                deps.provider,
                max_tokens=cfg.critic_max_tokens,
                structured=cfg.structured,
                with_labels=cfg.with_labels,
                limits=cfg.payload_limits,
            )
            result: CritiqueResult | None = None
            error: str | None = None
            try:
                result = await group_critic.critique(
                    question(unit["question_id"]), load(unit["libraries"]), rollouts, advantages
                )
            except (StructuredOutputError, openai.BadRequestError) as failure:
                # A critic that cannot fill the schema even after its repair round, or whose
                # request the server refuses (for example a prompt beyond its context), costs
                # this question its evidence, not the run: recorded here, counted in the report.
                error = f"{type(failure).__name__}: {failure}"
                logger.warning("critic failed on %s: %s", unit["question_id"], error)
            run.critiques.append(
                CritiqueRecord(
                    iteration=unit["iteration"],
                    unit_id=unit_id,
                    question_id=unit["question_id"],
                    rollout_ids=unit["rollout_ids"],
                    rewards=rewards,
                    advantages=advantages,
                    kept=True,
                    result=result,
                    error=error,
                )
            )
        done(unit["iteration"], "critic", unit_id, reused=reused)
        return {"critiques_done": [unit_id]}

    # -- aggregate, evolve, review ----------------------------------------------------------

    async def aggregate_node(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        started(iteration, "aggregate", 1)
        if run.aggregates.get(str(iteration)) is None:
            results = [
                r.result
                for r in run.critiques.read()
                if r.iteration == iteration and r.result is not None
            ]
            aggregation = await aggregate(results, load(state["libraries"]), deps.provider)
            run.aggregates.append(AggregateRecord(iteration=iteration, result=aggregation))
        done(iteration, "aggregate", f"it{iteration}-aggregate", reused=False)
        return {}

    async def evolve_node(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        started(iteration, "evolve", 1)
        existing = run.candidates.get(str(iteration))
        if existing is None:
            record = run.aggregates.get(str(iteration))
            assert record is not None  # written by the aggregate node before this one runs
            current = load(state["libraries"])
            result = await evolve(
                current,
                record.result,
                iteration=iteration,
                schedule=cfg.operator_schedule(),
                library_limit=cfg.library_limit,
                provider=deps.provider,
            )
            candidates: dict[str, str] = {}
            hashes: dict[str, str] = {}
            for agent in result.changed_agents:
                library = result.candidates[agent]
                candidates[agent] = run.save_library(run.candidate_dir(iteration, agent), library)
                hashes[agent] = library.content_hash()
            for op in result.records:
                run.operators.append(OperatorLine(iteration=iteration, record=op))
            existing = CandidateRecord(iteration=iteration, candidates=candidates, hashes=hashes)
            run.candidates.append(existing)
        done(iteration, "evolve", f"it{iteration}-evolve", reused=False)
        return {"candidates": existing.candidates, "candidate_hashes": existing.hashes}

    def review(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        if not cfg.review or not state["candidates"]:
            return {}
        started(iteration, "review", 0)
        current = load(state["libraries"])
        candidates = load(state["candidates"])
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

    # -- validation and commit --------------------------------------------------------------

    def variants(state: TrainingState) -> dict[str, tuple[dict[str, str], dict[str, str]]]:
        found = {BASE_VARIANT: (dict(state["libraries"]), dict(state["library_hashes"]))}
        for agent, path in state["candidates"].items():
            paths = {**state["libraries"], agent: path}
            hashes = {**state["library_hashes"], agent: state["candidate_hashes"][agent]}
            found[agent] = (paths, hashes)
        return found

    def send_validations(state: TrainingState) -> list[Send]:
        iteration = state["iteration"]
        v_ids = validation_ids(deps.task, cfg)
        sends: list[Send] = []
        for name, (paths, hashes) in variants(state).items():
            vhash = variant_hash(hashes, cfg.validation_sampling)
            for qid in v_ids:
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
        started(iteration, "validation", len(sends))
        return sends

    async def validate(unit: ValidationUnit) -> dict[str, Any]:
        unit_id = unit["unit_id"]
        reused = run.validation.get(unit_id) is not None
        if not reused:
            sampling = cfg.validation_sampling
            if sampling.temperature > 0:
                sampling = sampling.model_copy(update={"seed": derive_seed(cfg.seed, unit_id)})
            result = await execute(
                unit["libraries"],
                unit["question_id"],
                unit_id,
                sampling=sampling,
                group_index=unit["repeat"],
                iteration=unit["iteration"],
                stage="validation",
            )
            run.validation.append(
                ValidationRecord(
                    iteration=unit["iteration"],
                    unit_id=unit_id,
                    variant=unit["variant"],
                    variant_hash=unit["variant_hash"],
                    question_id=unit["question_id"],
                    repeat=unit["repeat"],
                    reward=result.reward,
                    rollout=result,
                )
            )
        done(unit["iteration"], "validation", unit_id, reused=reused)
        return {"validations_done": [unit_id]}

    def score(hashes: Mapping[str, str]) -> float:
        vhash = variant_hash(hashes, cfg.validation_sampling)
        rewards = []
        for qid in validation_ids(deps.task, cfg):
            for h in range(cfg.validation_repeats):
                record = run.validation.get(validation_unit_id(vhash, qid, h))
                if record is None:
                    raise GrseError(f"{run.validation.path}: validation {qid} h{h} is missing")
                rewards.append(record.reward)
        return sum(rewards) / len(rewards)

    def commit(state: TrainingState) -> dict[str, Any]:
        iteration = state["iteration"]
        started(iteration, "commit", 1)
        record = run.gate.get(str(iteration))
        if record is None:
            table = variants(state)
            base = score(table[BASE_VARIANT][1])
            candidate_scores = {agent: score(table[agent][1]) for agent in state["candidates"]}
            decisions = decide(base, candidate_scores, cfg.delta)
            aggregation = run.aggregates.get(str(iteration))
            assert aggregation is not None  # written by the aggregate node
            # Utilities credited this iteration are bookkeeping: they carry over even for
            # agents whose candidate was rejected or who had none.
            current = record_utilities(load(state["libraries"]), aggregation.result)
            candidates = load(state["candidates"])
            next_libraries = assemble(current, candidates, decisions)
            paths = {
                agent: run.save_library(run.library_dir(iteration, agent), lib)
                for agent, lib in next_libraries.items()
            }
            record = GateRecord(
                iteration=iteration,
                base_score=base,
                validation_questions=len(validation_ids(deps.task, cfg)),
                validation_repeats=cfg.validation_repeats,
                decisions=decisions,
                libraries_before=dict(state["library_hashes"]),
                libraries_after={a: lib.content_hash() for a, lib in next_libraries.items()},
                skills_after={a: lib.names() for a, lib in next_libraries.items()},
                library_paths=paths,
            )
            run.gate.append(record)
        deps.emit(ProgressEvent(kind="iteration_done", iteration=iteration, stage="commit"))
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

    def next_step(state: TrainingState) -> str:
        return "report" if state["iteration"] > cfg.iterations else "sample_batch"

    def report(state: TrainingState) -> dict[str, Any]:
        started(state["iteration"] - 1, "report", 1)
        if deps.usage is not None:
            run.write_usage(deps.usage())
        write_report(run)
        deps.emit(ProgressEvent(kind="run_done", iteration=state["iteration"] - 1, stage="report"))
        return {}

    retry = RetryPolicy(max_attempts=cfg.max_attempts)
    builder = StateGraph(TrainingState)
    builder.add_node("setup", setup)
    builder.add_node("sample_batch", sample_batch)
    builder.add_node("rollout", rollout, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("groups", groups)
    builder.add_node("critic", critic, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("aggregate", aggregate_node, retry_policy=retry)
    builder.add_node("evolve", evolve_node, retry_policy=retry)
    builder.add_node("review", review)
    builder.add_node("validate", validate, retry_policy=retry)  # type: ignore[arg-type]
    builder.add_node("commit", commit)
    builder.add_node("report", report)
    builder.set_entry_point("setup")
    builder.add_edge("setup", "sample_batch")
    builder.add_conditional_edges("sample_batch", send_rollouts, ["rollout"])
    builder.add_edge("rollout", "groups")
    builder.add_conditional_edges("groups", send_critics, ["critic", "aggregate"])
    builder.add_edge("critic", "aggregate")
    builder.add_edge("aggregate", "evolve")
    builder.add_edge("evolve", "review")
    builder.add_conditional_edges("review", send_validations, ["validate"])
    builder.add_edge("validate", "commit")
    builder.add_conditional_edges("commit", next_step, ["sample_batch", "report"])
    builder.add_edge("report", END)
    return builder


def training_run_config(config: TrainConfig, thread_id: str = "train") -> RunnableConfig:
    """The LangGraph run config: thread id, recursion limit and the concurrency bound."""
    return {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": recursion_limit(config),
        "max_concurrency": config.concurrency,
    }


def compile_training_graph(deps: TrainingDeps, checkpointer: Any = None) -> CompiledStateGraph:
    """Compile the training graph (with a checkpointer for resumable CLI runs, or without one
    for `langgraph dev`), bounded by the configured concurrency and recursion limit."""
    compiled = build_training_graph(deps).compile(checkpointer=checkpointer)
    limits: RunnableConfig = {
        "recursion_limit": recursion_limit(deps.config),
        "max_concurrency": deps.config.concurrency,
    }
    return compiled.with_config(limits)


def question_order(batch: Sequence[str], group_size: int) -> list[tuple[str, int]]:
    """The (question, g) order rollouts are queued in: each group contiguous."""
    return [(qid, g) for qid in batch for g in range(group_size)]
