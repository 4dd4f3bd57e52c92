"""Setup, the round's questions, the loop's exit and the final report."""

from __future__ import annotations

from typing import Any

from grse_graph.methods.rounds import RoundRequest, StartInputs
from grse_graph.skills import SkillLibrary

from ..context import TrainingContext
from ..ids import train_questions
from ..progress import ProgressEvent
from ..records import MethodStateRecord
from ..report import write_report
from ..state import RESET, TrainingState


class SetupStage:
    """The `setup`, `sample_batch` and `report` nodes and the `next_step` router."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    def setup(self, state: TrainingState) -> dict[str, Any]:
        """Save the starting libraries as iteration 0 and the method's starting state
        (nothing on a resumed run)."""
        if state.get("libraries"):
            return {}
        ctx, cfg = self.ctx, self.ctx.config
        if not ctx.run.exists():
            ctx.run.write_config(cfg)
        ctx.started(0, "setup")
        initial = ctx.deps.starting_libraries()
        libraries: dict[str, str] = {}
        hashes: dict[str, str] = {}
        for agent in ctx.team.agent_names:
            lib = initial.get(agent) or SkillLibrary(
                agent=agent, skills=[], limit=cfg.library_limit
            )
            libraries[agent] = ctx.run.save_library(ctx.run.library_dir(0, agent), lib)
            hashes[agent] = lib.content_hash()
        self.save_initial_state(initial)
        return {"iteration": 1, "libraries": libraries, "library_hashes": hashes, "scores": []}

    def save_initial_state(self, initial: dict[str, SkillLibrary]) -> None:
        """The method's state before round 1, written once as iteration 0 (stateful methods)."""
        ctx, cfg = self.ctx, self.ctx.config
        if ctx.method.state_type is None or ctx.run.method_states.get("0") is not None:
            return
        start = ctx.method.initial_state(
            StartInputs(
                team=ctx.team,
                libraries=initial,
                train=train_questions(ctx.task),
                size=cfg.batch_size,
                seed=cfg.seed,
            )
        )
        if start is not None:
            ctx.run.method_states.append(
                MethodStateRecord(
                    iteration=0, method=ctx.method.name, state=start.model_dump(mode="json")
                )
            )

    def sample_batch(self, state: TrainingState) -> dict[str, Any]:
        """The round's training questions (chosen by the method); per-iteration unit lists
        start over."""
        ctx, cfg = self.ctx, self.ctx.config
        iteration = state["iteration"]
        batch = ctx.method.round_questions(
            RoundRequest(
                iteration=iteration,
                train=train_questions(ctx.task),
                size=cfg.batch_size,
                seed=cfg.seed,
                state=ctx.prior_state(iteration),
            )
        )
        ctx.started(iteration, "rollouts", len(batch) * ctx.method.rollouts_per_question())
        return {
            "batch": batch,
            "credit_units": [],
            "candidates": {},
            "candidate_hashes": {},
            "rollouts_done": [RESET],
            "critiques_done": [RESET],
            "validations_done": [RESET],
        }

    def next_step(self, state: TrainingState) -> str:
        """Another round, or the report after the method's last one."""
        last = self.ctx.method.rounds(self.ctx.config.iterations)
        return "report" if state["iteration"] > last else "sample_batch"

    def report(self, state: TrainingState) -> dict[str, Any]:
        """usage.json, report.md and its plots."""
        ctx = self.ctx
        ctx.started(state["iteration"] - 1, "report", 1)
        if ctx.deps.usage is not None:
            ctx.run.write_usage(ctx.deps.usage())
        write_report(ctx.run, ctx.method)
        ctx.deps.emit(
            ProgressEvent(kind="run_done", iteration=state["iteration"] - 1, stage="report")
        )
        return {}
