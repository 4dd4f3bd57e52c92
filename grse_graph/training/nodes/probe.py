"""Probe stage (probe credit on): measure every skill of the iteration's base libraries by
execution, between the credit calls and the plan, for any method.

The questions are the first `probe.questions` of the training split in a seeded order, the same
every iteration, so a probe of libraries that did not change reuses its finished runs
(RUN/probes/probes.jsonl, keyed by the libraries' hash); the result of each iteration is in
RUN/probe_results.jsonl and the plan node adds it to the method's plan.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

from grse_graph.probes import ProbeResult, ProbeRun, ProbeSettings, ProbeStore, SkillProber
from grse_graph.tasks.base import TaskQuestion

from ..context import TrainingContext
from ..records import ProbeRecord
from ..state import TrainingState


def probe_questions(ctx: TrainingContext, settings: ProbeSettings) -> list[TaskQuestion]:
    """The probe's questions: a seeded order of the probe split, cut to `settings.questions`."""
    questions = list(ctx.task.split(settings.split))
    random.Random(f"probe:{ctx.config.seed}").shuffle(questions)
    return questions[: settings.questions]


class ProbeStage:
    """The `probe` node."""

    def __init__(self, ctx: TrainingContext) -> None:
        self.ctx = ctx

    async def probe(self, state: TrainingState) -> dict[str, Any]:
        """Probe the base libraries once per iteration (nothing when probe credit is off or
        every library is empty)."""
        ctx = self.ctx
        settings = ctx.config.probe
        iteration = state["iteration"]
        if settings is None or ctx.run.probe_results.get(str(iteration)) is not None:
            return {}
        libraries = await asyncio.to_thread(ctx.load, state["libraries"])
        if not any(len(library) for library in libraries.values()):
            return {}
        questions = probe_questions(ctx, settings)

        def finished(run: ProbeRun, resumed: bool) -> None:
            ctx.done(iteration, "probe", run.run_id, reused=resumed)

        prober = SkillProber(
            ctx.task,
            ctx.team.with_libraries(libraries),
            ctx.provider,
            settings,
            store=ProbeStore(ctx.run.probes_dir),
            concurrency=ctx.config.concurrency,
            max_tokens=ctx.config.actor_max_tokens,
            on_run=finished,
        )
        ctx.started(iteration, "probe", prober.plan(questions).runs)
        result: ProbeResult = await prober.run(questions)
        await asyncio.to_thread(
            ctx.run.probe_results.append, ProbeRecord(iteration=iteration, result=result)
        )
        return {}
