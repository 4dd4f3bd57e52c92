"""Run a probe: the planned team runs, greedy, resumable, reusing unchanged agents' outputs.

Every run decodes greedily on the same questions. The full-library run of a question goes
first; each masked run of that question replays its steps (`TeamState.replay`): an agent whose
prompt is unchanged (every agent upstream of the masked skill's agent, and any agent after it
whose input came out the same) reuses its recorded output instead of calling the model again.

With a folder, each finished run is appended to ``probes.jsonl`` under a stable id (libraries,
question, mask); running the same probe again reuses finished runs and makes only the rest
(failed runs are made again; the last record of an id wins).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from grse_graph.jsonl import JsonlStore
from grse_graph.llm.affinity import affinity, question_key
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.skills import SkillLibrary
from grse_graph.tasks.base import Task, TaskQuestion
from grse_graph.team.rollout import Rollout
from grse_graph.team.run import EXECUTION_ERRORS, run_rollout
from grse_graph.team.spec import TeamSpec

from .design import (
    ProbeDesign,
    ProbePlan,
    ProbeRequest,
    ProbeSettings,
    SkillRef,
    libraries_hash,
    masked_libraries,
    plan_probes,
)
from .effects import ProbeOutcome, SkillEffect, skill_effect

logger = logging.getLogger(__name__)

PROBES_FILE = "probes.jsonl"


class ProbeRun(BaseModel):
    """One finished team run of a probe (a line of probes.jsonl)."""

    run_id: str
    question_id: str
    masked: tuple[SkillRef, ...] = ()
    reward: float | None = None
    error: str | None = None
    rollout: Rollout | None = None

    @property
    def model_steps(self) -> int:
        """Agent turns that called the model."""
        return sum(not s.reused for s in self.rollout.steps) if self.rollout else 0

    @property
    def reused_steps(self) -> int:
        """Agent turns taken from the question's full-library run."""
        return sum(s.reused for s in self.rollout.steps) if self.rollout else 0


class ProbeResult(BaseModel):
    """A probe's effects and what it cost."""

    design: ProbeDesign
    questions: list[str]
    questions_left_out: int = 0
    budget: int
    runs: int = Field(description="team runs of the plan")
    runs_resumed: int = Field(description="runs found finished in the folder")
    runs_failed: int = 0
    model_steps: int = 0
    reused_steps: int = 0
    full_reward: float | None = Field(description="mean reward of the full libraries")
    effects: list[SkillEffect]
    confidence: float = Field(default=0.95, description="the level of every effect's interval")
    elapsed_s: float = 0.0

    def effect_of(self, agent: str, skill: str) -> SkillEffect | None:
        """The effect of one skill, if it was probed."""
        for effect in self.effects:
            if effect.agent == agent and effect.skill == skill:
                return effect
        return None


RunCallback = Callable[[ProbeRun, bool], None]
"""Called once per finished run with (run, resumed)."""


class ProbeStore:
    """A probe folder: ``probes.jsonl``, one `ProbeRun` per finished run, keyed by run id."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._runs = JsonlStore(folder / PROBES_FILE, ProbeRun, key=lambda r: r.run_id)

    def get(self, run_id: str) -> ProbeRun | None:
        """The finished run with this id, or None."""
        return self._runs.get(run_id)

    def append(self, run: ProbeRun) -> None:
        """Record one finished run durably."""
        self._runs.append(run)

    def read(self) -> list[ProbeRun]:
        """Every recorded run in file order (a failed run made again is there twice)."""
        return self._runs.read()


def _invocations(team: TeamSpec, runs: Sequence[ProbeRun], ref: SkillRef) -> int | None:
    # Loads are seen only where skills come through a tool; inline bodies leave no trace.
    if team.agent(ref.agent).skill_mode == "inline":
        return None
    return sum(
        step.skills_invoked.count(ref.skill)
        for run in runs
        if run.rollout is not None and not run.masked
        for step in run.rollout.steps_of(ref.agent)
    )


@dataclass(frozen=True)
class SkillProber:
    """Makes one probe of a team's libraries on a task's questions (see the module docstring).

    `max_tokens` caps each agent turn (None: the actor role's cap); `concurrency` bounds the
    runs in flight (at least one); `on_run` sees every finished run, for progress displays.
    """

    task: Task
    team: TeamSpec
    provider: ChatModelProvider
    settings: ProbeSettings
    _: KW_ONLY
    store: ProbeStore | None = None
    concurrency: int = 1
    max_tokens: int | None = None
    on_run: RunCallback | None = None

    def plan(self, questions: Sequence[TaskQuestion]) -> ProbePlan:
        """The runs this probe would make (ProbeError when it cannot)."""
        return plan_probes(self.team.libraries(), [q.id for q in questions], self.settings)

    async def run(self, questions: Sequence[TaskQuestion]) -> ProbeResult:
        """Make the planned runs (reusing finished ones) and measure every skill's effect."""
        started = time.perf_counter()
        plan = self.plan(questions)
        by_id = {q.id: q for q in questions}
        libraries = self.team.libraries()
        fingerprint = libraries_hash(libraries)
        semaphore = asyncio.Semaphore(max(1, self.concurrency))
        resumed = 0

        async def one(request: ProbeRequest, replay: Rollout | None) -> ProbeRun:
            nonlocal resumed
            run_id = request.run_id(fingerprint)
            found = self.store.get(run_id) if self.store is not None else None
            # A failed run is made again, as `grse eval` retries failed questions.
            if found is not None and found.reward is not None:
                resumed += 1
                self._finished(found, resumed=True)
                return found
            async with semaphore:
                with affinity(question_key(request.question_id)):
                    run = await self._execute(
                        request, run_id, by_id[request.question_id], libraries, replay
                    )
            if self.store is not None:
                await asyncio.to_thread(self.store.append, run)
            self._finished(run, resumed=False)
            return run

        full_requests = [r for r in plan.requests if r.is_full]
        full_runs = await asyncio.gather(*(one(r, None) for r in full_requests))
        full_by_question = {run.question_id: run for run in full_runs}
        masked_runs = await asyncio.gather(
            *(
                one(r, full_by_question[r.question_id].rollout)
                for r in plan.requests
                if not r.is_full
            )
        )
        runs = [*full_runs, *masked_runs]
        return self._result(plan, runs, resumed, time.perf_counter() - started)

    def _finished(self, run: ProbeRun, *, resumed: bool) -> None:
        if self.on_run is not None:
            self.on_run(run, resumed)

    async def _execute(
        self,
        request: ProbeRequest,
        run_id: str,
        question: TaskQuestion,
        libraries: Mapping[str, SkillLibrary],
        replay: Rollout | None,
    ) -> ProbeRun:
        team = self.team.with_libraries(masked_libraries(libraries, request.masked))
        try:
            rollout = await run_rollout(
                team,
                self.task,
                question,
                self.provider,
                sampling=SamplingSettings.greedy(),
                rollout_id=f"probe:{run_id}",
                metadata={"probe_masked": [ref.key for ref in request.masked]},
                max_tokens=self.max_tokens,
                replay=replay.steps if replay is not None and replay.error is None else (),
            )
        except EXECUTION_ERRORS as error:
            logger.warning("probe run %s failed: %s", run_id, error)
            return ProbeRun(
                run_id=run_id,
                question_id=request.question_id,
                masked=request.masked,
                error=f"{type(error).__name__}: {error}",
            )
        return ProbeRun(
            run_id=run_id,
            question_id=request.question_id,
            masked=request.masked,
            reward=rollout.reward,
            rollout=rollout,
        )

    def _result(
        self, plan: ProbePlan, runs: Sequence[ProbeRun], resumed: int, elapsed_s: float
    ) -> ProbeResult:
        failed = [r for r in runs if r.reward is None]
        # A question whose full run failed has nothing to pair with: all its runs are left out.
        broken = {r.question_id for r in failed if not r.masked}
        outcomes = [
            ProbeOutcome(question_id=r.question_id, masked=r.masked, reward=r.reward)
            for r in runs
            if r.reward is not None and r.question_id not in broken
        ]
        full = [o.reward for o in outcomes if not o.masked]
        effects = [
            skill_effect(
                outcomes,
                ref,
                design=plan.design,
                confidence=self.settings.confidence,
                resamples=self.settings.resamples,
                seed=self.settings.seed,
                invocations=_invocations(self.team, runs, ref),
            )
            for ref in plan.skills
        ]
        planned = plan.model_dump(include={"design", "questions", "questions_left_out", "budget"})
        return ProbeResult(
            **planned,
            runs=plan.runs,
            runs_resumed=resumed,
            runs_failed=len(failed),
            model_steps=sum(r.model_steps for r in runs),
            reused_steps=sum(r.reused_steps for r in runs),
            full_reward=sum(full) / len(full) if full else None,
            effects=effects,
            confidence=self.settings.confidence,
            elapsed_s=elapsed_s,
        )
