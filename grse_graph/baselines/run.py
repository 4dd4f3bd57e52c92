"""`run_baseline`: evaluate a single-model baseline with the evaluation harness."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from grse_graph.evaluation import EvalSummary, run_evaluation
from grse_graph.llm.provider import ChatModelProvider, SamplingSettings
from grse_graph.tasks.base import Task

from .methods import BaselineName, make_baseline


async def run_baseline(
    method: BaselineName,
    task: Task,
    split: str,
    provider: ChatModelProvider,
    out_dir: Path,
    *,
    limit: int | None = None,
    concurrency: int = 1,
    sampling: SamplingSettings | None = None,
    progress: bool = True,
    data: str | None = None,
    console: Console | None = None,
) -> EvalSummary:
    """Run a baseline over a split, writing the same files as `run_evaluation` (resumable)."""
    baseline = make_baseline(method, task, provider, sampling)
    return await run_evaluation(
        task,
        split,
        baseline,
        provider,
        out_dir,
        limit=limit,
        concurrency=concurrency,
        sampling=baseline.sampling,
        progress=progress,
        data=data,
        console=console,
    )
