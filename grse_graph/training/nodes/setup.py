"""Setup, batch sampling, the loop's exit and the final report."""

from __future__ import annotations

from typing import Any

from grse_graph.skills import SkillLibrary

from ..context import TrainingContext
from ..ids import sample_batch_ids
from ..progress import ProgressEvent
from ..report import write_report
from ..state import RESET, TrainingState


class SetupStage:
    """The `setup`, `sample_batch` and `report` nodes and the `next_step` router."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    def setup(self, state: TrainingState) -> dict[str, Any]:
        """Save the starting libraries as iteration 0 (nothing on a resumed run)."""
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
        return {"iteration": 1, "libraries": libraries, "library_hashes": hashes, "scores": []}

    def sample_batch(self, state: TrainingState) -> dict[str, Any]:
        """The iteration's batch; per-iteration unit lists start over."""
        ctx = self.ctx
        iteration = state["iteration"]
        batch = sample_batch_ids(ctx.task, ctx.config, iteration)
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
        """Another iteration, or the report after the last one."""
        return "report" if state["iteration"] > self.ctx.config.iterations else "sample_batch"

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
