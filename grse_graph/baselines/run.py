"""`run_baseline`: evaluate a single-model baseline with the evaluation harness."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Unpack

from grse_graph.evaluation import EvalSummary, run_evaluation
from grse_graph.evaluation.runner import EvaluationOptions
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
    sampling: SamplingSettings | None = None,
    settings: Mapping[str, Any] | None = None,
    **options: Unpack[EvaluationOptions],
) -> EvalSummary:
    """Run a baseline over a split, writing the same files as `run_evaluation` (resumable);
    `settings` are the baseline's own (`make_baseline`), `options` as for `run_evaluation`."""
    baseline = make_baseline(method, task, provider, sampling, **(settings or {}))
    return await run_evaluation(
        task, split, baseline, provider, out_dir, sampling=baseline.sampling, **options
    )
